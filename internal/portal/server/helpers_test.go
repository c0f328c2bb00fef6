package server_test

import (
	"fmt"

	"github.com/mooringhq/mooring/internal/portal/server"
)

// Config is server.Config, short for the tests' option functions.
type Config = server.Config

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
