package sut

import (
	"context"
	"errors"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DialFunc opens a session's connection to network/addr, as pgx's ConnConfig.DialFunc does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// viaDial makes cfg connect through dial, in plaintext: a proxy that reads the wire protocol's
// framing (the fault proxy) cannot read TLS. A connection string that demands TLS cannot be
// proxied, and says so.
func viaDial(cfg *pgx.ConnConfig, dial DialFunc) error {
	if cfg.TLSConfig != nil {
		plain := false
		for _, fb := range cfg.Fallbacks {
			plain = plain || fb.TLSConfig == nil
		}
		if !plain {
			return errors.New("pgqcheck: the fault proxy needs a plaintext connection, and the connection string requires TLS; use sslmode=disable or prefer in PGQCHECK_DSN")
		}
	}
	cfg.TLSConfig = nil
	var fallbacks []*pgconn.FallbackConfig
	for _, fb := range cfg.Fallbacks {
		if fb.TLSConfig == nil {
			fallbacks = append(fallbacks, fb)
		}
	}
	cfg.Fallbacks = fallbacks
	cfg.DialFunc = pgconn.DialFunc(dial)
	return nil
}

// lostAfterSend is the error of a statement sent on a connection that was open: pgx reports a
// connection that died while it waited for the answer as "conn closed", an error it calls safe
// to retry (as it is for the next statement), though this one may have taken effect, a COMMIT
// above all. Such an error is a lost reply.
func lostAfterSend(wasOpen bool, err error) error {
	if err != nil && wasOpen && errors.Is(err, pgconn.ErrConnClosed) {
		return &LostReply{err}
	}
	return err
}
