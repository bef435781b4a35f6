package history

import "testing"

// TestRecorderClock: every timestamp is strictly later than the one before, across goroutines.
func TestLinearRecorderClock(t *testing.T) {
	r := NewRecorder(false)
	done := make(chan []int64)
	for g := 0; g < 4; g++ {
		go func() {
			var ts []int64
			for i := 0; i < 10000; i++ {
				ts = append(ts, r.Now())
			}
			done <- ts
		}()
	}
	seen := map[int64]bool{}
	for g := 0; g < 4; g++ {
		ts := <-done
		for i, x := range ts {
			if seen[x] || (i > 0 && x <= ts[i-1]) {
				t.Fatalf("timestamp %d repeated or out of order", x)
			}
			seen[x] = true
		}
	}
}
