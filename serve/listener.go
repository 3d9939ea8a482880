package serve

import (
	"net"
	"sync"
)

// limitListener accepts at most n connections open at once: Accept waits
// for one to close first, so clients beyond the limit queue in the
// kernel's listen backlog instead of taking file descriptors. (The same
// as golang.org/x/net/netutil.LimitListener, without the dependency.)
func limitListener(ln net.Listener, n int) net.Listener {
	return &limited{Listener: ln, sem: make(chan struct{}, n), closed: make(chan struct{})}
}

type limited struct {
	net.Listener
	sem       chan struct{}
	closeOnce sync.Once
	closed    chan struct{}
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limited) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
