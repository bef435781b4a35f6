package faultproxy

import (
	"net"
	"sync/atomic"
	"time"
)

// Listen starts a proxy for clients the suite does not dial itself (a worker process, a queue
// library's own connection pool): every connection it accepts on its loopback port (Addr) is
// relayed to the server at network/addr ("unix" and a socket path, or "tcp" and host:port)
// as a Link of its own, on which faults are armed as on any other (Links). Close ends it.
func Listen(network, addr string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, links: map[uint64]*Link{}, done: make(chan struct{}), target: &target{network: network, addr: addr}}
	p.wg.Add(1)
	go p.forward()
	return p, nil
}

// target is where a listening proxy relays its connections, and until when it refuses them.
type target struct {
	network, addr string
	ids           atomic.Uint64
	refuseUntil   atomic.Int64 // unix nanoseconds
}

// dialTimeout bounds a listening proxy's dial of the server for one accepted connection.
const dialTimeout = 5 * time.Second

func (p *Proxy) forward() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if time.Now().UnixNano() < p.target.refuseUntil.Load() {
				c.Close()
				return
			}
			server, err := net.DialTimeout(p.target.network, p.target.addr, dialTimeout)
			if err != nil {
				c.Close()
				return
			}
			l := &Link{p: p, id: p.target.ids.Add(1), server: server, attached: make(chan struct{}), closed: make(chan struct{})}
			p.mu.Lock()
			select {
			case <-p.done:
				p.mu.Unlock()
				server.Close()
				c.Close()
				return
			default:
			}
			p.links[l.id] = l
			p.mu.Unlock()
			if !l.attach(c) {
				l.Close()
				c.Close()
			}
		}()
	}
}

// Links are the proxy's open links, for arming faults on connections its clients opened.
func (p *Proxy) Links() []*Link {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*Link, 0, len(p.links))
	for _, l := range p.links {
		out = append(out, l)
	}
	return out
}

// Partition cuts every open link of a listening proxy and refuses new connections for d: its
// clients lose the server mid-whatever-they-were-doing and cannot reach it again until d is
// over.
func (p *Proxy) Partition(d time.Duration) {
	if p.target != nil {
		p.target.refuseUntil.Store(time.Now().Add(d).UnixNano())
	}
	for _, l := range p.Links() {
		l.Close()
	}
}
