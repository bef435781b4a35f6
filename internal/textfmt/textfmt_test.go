package textfmt

import "testing"

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1429: "1,429", 1000000: "1,000,000", -12345: "-12,345"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFirstWord(t *testing.T) {
	for s, want := range map[string]string{"15.4 (Debian 15.4-1)": "15.4", "crash: server killed": "crash", "stall": "stall", "": "", " 18.1": "18.1"} {
		if got := FirstWord(s); got != want {
			t.Errorf("FirstWord(%q) = %q, want %q", s, got, want)
		}
	}
}
