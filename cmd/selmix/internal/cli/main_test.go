package cli

import (
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
)

func TestMain(m *testing.M) { selmixtest.Main(m) }
