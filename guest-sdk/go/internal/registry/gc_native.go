//go:build !wasip1

package registry

// Natively (a plugin's unit tests) the host allocates nothing in the plugin: the collector runs as Go's does.

func enterHook() {}

func leaveHook() {}

// HostCall runs f.
func HostCall(f func()) { f() }
