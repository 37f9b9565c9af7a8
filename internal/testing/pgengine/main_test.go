package pgengine_test

import (
	"os"
	"testing"

	"github.com/dpsql/dpsql/internal/testing/memtmp"
)

// TestMain keeps the package's database files in memory (memtmp): no
// disk syncs.
func TestMain(m *testing.M) { os.Exit(memtmp.Run(m)) }
