//go:build !wasip1

package guest

// Outside the server (a plugin's unit tests, run natively with `go test`), the host's imports do not exist: logging
// goes to standard error, and reads fail.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// ErrNoHost is what Get and List answer outside the server.
var ErrNoHost = errors.New("the host's reads exist only inside the server (this is a native build)")

// Debugf logs at debug level in the server's log, under the plugin's name (natively: to standard error).
func Debugf(format string, args ...any) { logf("debug", format, args...) }

// Infof logs at info level.
func Infof(format string, args ...any) { logf("info", format, args...) }

// Warnf logs at warn level.
func Warnf(format string, args ...any) { logf("warn", format, args...) }

// Errorf logs at error level; when the call then fails, the client's message carries the last such line.
func Errorf(format string, args ...any) { logf("error", format, args...) }

func logf(level string, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", level, fmt.Sprintf(format, args...))
}

// Get reads one object of a resource the plugin declared in Reads (natively: ErrNoHost).
func Get(group, resource, namespace, name string, into any) (bool, error) {
	return false, ErrNoHost
}

// List reads the objects of a resource the plugin declared in Reads (natively: ErrNoHost).
func List(group, resource, namespace, labelSelector string) ([]json.RawMessage, error) {
	return nil, ErrNoHost
}
