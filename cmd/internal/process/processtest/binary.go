package processtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// wheelmqPkg is the package Binary builds.
const wheelmqPkg = "github.com/wheelmq/wheelmq/cmd/wheelmq"

// binary is the wheelmq binary of this test process, built at most once.
var binary struct {
	once      sync.Once
	dir, path string
	err       error
}

// Binary returns the path of cmd/wheelmq built for this test process:
// the first call builds it (go build, a few seconds with a warm build
// cache, bounded by 5 minutes), later calls of every test of the package
// share it. The package's TestMain removes it with RemoveBinary.
func Binary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		dir, err := os.MkdirTemp("", "wheelmq-test-bin-")
		if err != nil {
			binary.err = fmt.Errorf("build wheelmq: %w", err)
			return
		}
		binary.dir = dir
		path := filepath.Join(dir, "wheelmq")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", path, wheelmqPkg).CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("go build %s: %w\n%s", wheelmqPkg, err, out)
			return
		}
		binary.path = path
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// RemoveBinary removes what Binary built; a package whose tests call
// Binary calls it from TestMain once m.Run has returned.
func RemoveBinary() {
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
}
