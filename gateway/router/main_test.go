package router_test

import (
	"os"
	"testing"

	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestMain waits, after the tests, until their databases are dropped.
func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }
