package sut

import "context"

// ReconnectAdmin opens a new admin connection after the server restarted (the old one died
// with the server) and closes the old one. Nothing may use Admin meanwhile: the caller
// stops whoever does first.
func (in *Installed) ReconnectAdmin(ctx context.Context) error {
	c, err := connect(ctx, in.DSN, "pgqcheck-admin")
	if err != nil {
		return err
	}
	old := in.admin
	in.admin = c
	old.Close(context.Background())
	return nil
}
