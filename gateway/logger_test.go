package gateway

import (
	"io"
	"log/slog"
)

func testLoggerDiscard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
