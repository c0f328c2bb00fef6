package poll

import (
	"errors"
	"fmt"
	"go/build"
	"strings"
	"testing"
	"time"
)

// Poll returns nil as soon as check does, and after the deadline the last error check
// returned, not the first.
func TestPoll(t *testing.T) {
	calls := 0
	if err := Poll(time.Minute, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || calls != 3 {
		t.Errorf("Poll of a check that passes on its 3rd call = %v after %d calls, want nil after 3", err, calls)
	}

	calls = 0
	err := Poll(250*time.Millisecond, func() error {
		calls++
		return fmt.Errorf("seen %d", calls)
	})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("last seen: seen %d", calls)) || calls < 2 {
		t.Errorf("Poll of a check that never passes = %v after %d calls, want the last error (\"last seen: seen %d\") after several", err, calls, calls)
	}
}

// The package stays a leaf: only the standard library, so any test can import it.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("poll imports %s: it must import only the standard library", imp)
		}
	}
}
