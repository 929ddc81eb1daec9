package crm

import (
	"context"
	"errors"
)

func openPostgres(ctx context.Context, setting string) (*Store, error) {
	return nil, errors.New("crm: PostgreSQL is not built into this binary")
}
