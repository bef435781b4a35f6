// Package faultproxy is a TCP proxy on loopback that sits between a suite session and
// Postgres and breaks the connection on purpose: it delivers a statement and drops the
// server's reply (the server runs and commits it; the client never learns), delays a reply,
// cuts the connection in the middle of a request, or stalls a request half sent.
//
// It understands the Postgres wire protocol only as far as framing: a startup message, then
// messages of one type byte and a length. It counts the client's Sync and Query messages and
// the server's ReadyForQuery answers, one for each, and that is how it knows which replies
// belong to the statement a fault was armed for. Faults are per connection (a Link), armed
// for the next request the client sends.
package faultproxy

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is a fault a link can inject.
type Kind string

const (
	// DropReply delivers the next request, lets the server answer all of it, drops that
	// answer and closes the connection: the statement ran (and in autocommit committed), and
	// the client sees only a lost connection.
	DropReply Kind = "drop-reply"
	// DelayReply holds the answer to the next request for the fault's duration.
	DelayReply Kind = "delay-reply"
	// Cut sends the server the next request up to the middle of one of its messages and
	// closes the connection there: the server reads a truncated message and runs nothing
	// after it.
	Cut Kind = "cut"
	// Stall sends the next request up to the middle of one of its messages, holds the rest
	// for the fault's duration, then sends it: the server waits mid-message.
	Stall Kind = "stall"
)

// Kinds is every fault kind, in a fixed order (scheduled mode draws from it by index).
var Kinds = []Kind{DropReply, DelayReply, Cut, Stall}

// Lost reports whether a fault of kind k ends the connection, leaving the statement it hit
// with an unknown outcome.
func (k Kind) Lost() bool { return k == DropReply || k == Cut }

// Fault is one armed fault: its kind and, for a delay or a stall, how long it holds.
type Fault struct {
	Kind Kind
	For  time.Duration
}

func (f Fault) String() string {
	if f.Kind.Lost() {
		return string(f.Kind)
	}
	return fmt.Sprintf("%s %v", f.Kind, f.For)
}

// Proxy accepts the connections its Dial opens, on 127.0.0.1 only, and relays each to the
// server address Dial was given. Close ends every link and goroutine it started.
type Proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	links map[uint64]*Link
	wg    sync.WaitGroup
	done  chan struct{}
	once  sync.Once
	// target is where a proxy started by Listen relays what it accepts (nil: one started by
	// New, whose connections Dial opens).
	target *target
}

// New starts a proxy listening on an ephemeral loopback port.
func New() (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: fault proxy: listening on loopback: %v", err)
	}
	p := &Proxy{ln: ln, links: map[uint64]*Link{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the listener, ends every link and waits for all of the proxy's goroutines.
func (p *Proxy) Close() error {
	p.once.Do(func() {
		close(p.done)
		p.ln.Close()
		p.mu.Lock()
		links := make([]*Link, 0, len(p.links))
		for _, l := range p.links {
			links = append(links, l)
		}
		p.mu.Unlock()
		for _, l := range links {
			l.Close()
		}
	})
	p.wg.Wait()
	return nil
}

// The client side of a link announces itself with a preamble of the link's random id, so that
// the accepting side can pair the connection with the server connection Dial opened; any
// other connection to the listener is closed at once.
const preambleLen = 8

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			var id [preambleLen]byte
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(c, id[:]); err != nil {
				c.Close()
				return
			}
			_ = c.SetReadDeadline(time.Time{})
			p.mu.Lock()
			l := p.links[binary.BigEndian.Uint64(id[:])]
			p.mu.Unlock()
			if l == nil || !l.attach(c) {
				c.Close()
			}
		}()
	}
}

// Dial opens a link to the server at network/addr (as pgx's DialFunc receives them: "unix"
// and a socket path, or "tcp" and host:port) and returns it; the client talks to the server
// through Link.Conn.
func (p *Proxy) Dial(ctx context.Context, network, addr string) (*Link, error) {
	select {
	case <-p.done:
		return nil, errors.New("pgqcheck: fault proxy is closed")
	default:
	}
	var d net.Dialer
	server, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	var idb [preambleLen]byte
	if _, err := rand.Read(idb[:]); err != nil {
		server.Close()
		return nil, err
	}
	l := &Link{p: p, id: binary.BigEndian.Uint64(idb[:]), server: server, attached: make(chan struct{}), closed: make(chan struct{})}
	p.mu.Lock()
	p.links[l.id] = l
	p.mu.Unlock()
	client, err := d.DialContext(ctx, "tcp", p.Addr())
	if err == nil {
		_, err = client.Write(idb[:])
	}
	if err == nil {
		select {
		case <-l.attached:
		case <-ctx.Done():
			err = ctx.Err()
		case <-p.done:
			err = errors.New("pgqcheck: fault proxy is closed")
		case <-time.After(5 * time.Second):
			err = errors.New("pgqcheck: fault proxy did not accept its own connection within 5s")
		}
	}
	if err != nil {
		if client != nil {
			client.Close()
		}
		l.Close()
		return nil, err
	}
	l.client = client
	return l, nil
}

// DialFunc is Dial in the shape of pgx's ConnConfig.DialFunc; each link it opens is passed to
// opened first (nil: none), so that its owner can arm faults on it.
func (p *Proxy) DialFunc(opened func(*Link)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		l, err := p.Dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if opened != nil {
			opened(l)
		}
		return l.Conn(), nil
	}
}

// Link is one proxied connection: the client's end (Conn), the server connection, and the
// fault armed for the client's next request that runs a statement.
type Link struct {
	p        *Proxy
	id       uint64
	client   net.Conn // the end handed to the client
	server   net.Conn // the proxy's connection to Postgres
	inner    net.Conn // the proxy's end of client
	attached chan struct{}
	closed   chan struct{}
	once     sync.Once

	mu    sync.Mutex
	armed *armed

	// Sync and Query messages sent, ReadyForQuery answers received: each request ends with
	// one of the former and is answered by one of the latter.
	syncs, ready atomic.Int64
	// drop: answers to requests from this count of syncs on are dropped (-1: none).
	drop atomic.Int64
	// delay: the next answer at or past this count waits delayFor first.
	delayFrom atomic.Int64
	delayFor  atomic.Int64

	hits atomic.Int64
}

type armed struct {
	f   Fault
	hit func()
}

// Conn is the client's end of the link.
func (l *Link) Conn() net.Conn { return l.client }

// Arm makes f hit the client's next request; hit (nil: nothing) is called when it does. A
// fault armed while another waits replaces it.
func (l *Link) Arm(f Fault, hit func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = &armed{f, hit}
}

// Disarm drops the fault waiting for the client's next request, if any.
func (l *Link) Disarm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = nil
}

// Armed reports whether a fault waits for the client's next request.
func (l *Link) Armed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.armed != nil
}

// Hits is how many faults have hit this link.
func (l *Link) Hits() int { return int(l.hits.Load()) }

// Closed is closed once the link is over.
func (l *Link) Closed() <-chan struct{} { return l.closed }

// Close ends both connections of the link.
func (l *Link) Close() {
	l.once.Do(func() {
		close(l.closed)
		l.server.Close()
		if l.inner != nil {
			l.inner.Close()
		}
		l.p.mu.Lock()
		delete(l.p.links, l.id)
		l.p.mu.Unlock()
	})
}

func (l *Link) attach(inner net.Conn) bool {
	select {
	case <-l.attached:
		return false
	case <-l.closed:
		return false
	default:
	}
	l.inner = inner
	l.drop.Store(-1)
	l.delayFrom.Store(-1)
	close(l.attached)
	l.p.wg.Add(2)
	go func() { defer l.p.wg.Done(); defer l.Close(); l.requests() }()
	go func() { defer l.p.wg.Done(); defer l.Close(); l.answers() }()
	return true
}

// take disarms the waiting fault, if any, and reports it as hit.
func (l *Link) take() *armed {
	l.mu.Lock()
	a := l.armed
	l.armed = nil
	l.mu.Unlock()
	if a != nil {
		l.hits.Add(1)
		if a.hit != nil {
			a.hit()
		}
	}
	return a
}

// sleep waits d, or until the link closes; it reports whether the link is still open.
func (l *Link) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.closed:
		return false
	}
}

// maxMessage bounds a message's length: a larger one is not Postgres talking.
const maxMessage = 1 << 30

// requests relays the client's bytes to the server, message by message, applying the armed
// fault to the first request that comes after it.
func (l *Link) requests() {
	in := l.inner
	// The startup message has no type byte. With TLS off (a proxied session always has it
	// off) it is the only untyped message.
	var head [4]byte
	if _, err := io.ReadFull(in, head[:]); err != nil {
		return
	}
	n := binary.BigEndian.Uint32(head[:])
	if n < 8 || n > maxMessage {
		return
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(in, body); err != nil {
		return
	}
	if _, err := l.server.Write(append(head[:], body...)); err != nil {
		return
	}
	buf := make([]byte, 64<<10)
	var pending []byte // bytes read and not yet relayed: whole messages, then part of one
	for {
		k, err := in.Read(buf)
		if k > 0 {
			chunk := append(pending, buf[:k]...)
			whole := wholeMessages(chunk)
			pending = append([]byte(nil), chunk[whole:]...)
			if !l.relay(chunk[:whole]) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wholeMessages is the length of the prefix of b that holds only whole messages.
func wholeMessages(b []byte) int {
	off := 0
	for len(b)-off >= 5 {
		n := int(binary.BigEndian.Uint32(b[off+1 : off+5]))
		if n < 4 || n > maxMessage || len(b)-off < 1+n {
			break
		}
		off += 1 + n
	}
	return off
}

// relay sends whole messages to the server, counting their Syncs and Queries, with the armed
// fault applied to them. It reports whether the link goes on.
func (l *Link) relay(msgs []byte) bool {
	if len(msgs) == 0 {
		return true
	}
	var a *armed
	if runs(msgs) {
		a = l.take()
	}
	before := l.syncs.Load()
	count := func(b []byte) {
		for off := 0; off < len(b); {
			n := int(binary.BigEndian.Uint32(b[off+1 : off+5]))
			if b[off] == 'S' || b[off] == 'Q' {
				l.syncs.Add(1)
			}
			off += 1 + n
		}
	}
	if a == nil {
		count(msgs)
		_, err := l.server.Write(msgs)
		return err == nil
	}
	switch a.f.Kind {
	case DropReply:
		l.drop.Store(before)
	case DelayReply:
		l.delayFor.Store(int64(a.f.For))
		l.delayFrom.Store(before)
	case Cut, Stall:
		mid := middle(msgs)
		if _, err := l.server.Write(msgs[:mid]); err != nil {
			return false
		}
		if a.f.Kind == Cut {
			return false
		}
		if !l.sleep(a.f.For) {
			return false
		}
		count(msgs)
		_, err := l.server.Write(msgs[mid:])
		return err == nil
	}
	count(msgs)
	_, err := l.server.Write(msgs)
	return err == nil
}

// runs reports whether msgs run a statement (an Execute or a simple Query): a fault waits for
// such a request, so that a statement prepared on first use takes its fault with its
// execution, not with its preparation.
func runs(msgs []byte) bool {
	for off := 0; off < len(msgs); {
		if msgs[off] == 'E' || msgs[off] == 'Q' {
			return true
		}
		off += 1 + int(binary.BigEndian.Uint32(msgs[off+1:off+5]))
	}
	return false
}

// middle is an offset inside the message that spans the middle of msgs: past its type byte and
// length, short of its end, so that what is sent up to it is a truncated message.
func middle(msgs []byte) int {
	half := len(msgs) / 2
	for off := 0; off < len(msgs); {
		n := int(binary.BigEndian.Uint32(msgs[off+1 : off+5]))
		end := off + 1 + n
		if half < end {
			return off + 1 + max(1, n/2)
		}
		off = end
	}
	return len(msgs) - 1
}

// answers relays the server's messages to the client: dropped once a DropReply hit, delayed
// once after a DelayReply hit. After a dropped answer it waits until the server has answered
// every request the client sent, then ends the link.
func (l *Link) answers() {
	r := &reader{c: bufio.NewReaderSize(l.server, 64<<10)}
	w := bufio.NewWriterSize(l.inner, 64<<10)
	for {
		// Answers are relayed in the batches they come in: flushed whenever no more of them
		// are waiting to be read.
		if r.c.Buffered() == 0 && w.Buffered() > 0 {
			if w.Flush() != nil {
				return
			}
		}
		msg, err := r.next()
		if err != nil {
			_ = w.Flush()
			return
		}
		ready := l.ready.Load()
		if from := l.delayFrom.Load(); from >= 0 && ready >= from {
			l.delayFrom.Store(-1)
			if w.Flush() != nil || !l.sleep(time.Duration(l.delayFor.Load())) {
				return
			}
		}
		dropped := false
		if from := l.drop.Load(); from >= 0 && ready >= from {
			dropped = true
		} else if _, err := w.Write(msg); err != nil {
			return
		}
		if msg[0] == 'Z' {
			ready = l.ready.Add(1)
		}
		if dropped && msg[0] == 'Z' && ready >= l.syncs.Load() {
			// The client's request may still be arriving in pieces: it is over once no more of
			// it comes for a little while.
			if !l.sleep(20 * time.Millisecond) {
				return
			}
			if ready >= l.syncs.Load() {
				return
			}
		}
	}
}

// reader reads whole server messages. The server's messages all carry a type byte once the
// startup is over (without TLS there is no one-byte SSL answer).
type reader struct{ c *bufio.Reader }

func (r *reader) next() ([]byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r.c, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n < 4 || n > maxMessage {
		return nil, fmt.Errorf("pgqcheck: fault proxy: a server message of length %d", n)
	}
	msg := make([]byte, 1+n)
	copy(msg, head[:])
	if _, err := io.ReadFull(r.c, msg[5:]); err != nil {
		return nil, err
	}
	return msg, nil
}
