//go:build wasip1

package registry

import "runtime/debug"

// The garbage collector runs inside hooks only.
//
// The host writes a call's arguments (and an import's results) into memory it asks the plugin for (cabi_realloc),
// and the component model forbids the plugin to call any import meanwhile. An allocation there that starts, assists
// or finishes a collection reads the clock (a collection's end reads the wall clock, which the WASI adapter does not
// cache as it does the monotonic one), an import: the instance traps ("cannot leave component instance"). So the
// collector is off between calls and during the host's reads, and on (at GCPercent) while a hook runs.

// GCPercent is the collector's target while hooks run (GOGC): lower than Go's 100, so that a collection starts once
// the heap grew by about 400 KiB (or a tenth of what is live), not 4 MiB: an instance of the Go wardle then stays
// under 5 MiB of linear memory, nearly 3 MiB of which is the binary's own data (plugin-bench, BENCHMARKS.md).
const GCPercent = 10

// hookDepth counts the hooks running (a hook may call another through the SDK).
var hookDepth int

func init() {
	debug.SetGCPercent(-1)
}

// enterHook turns the collector on for a hook.
func enterHook() {
	if hookDepth == 0 {
		debug.SetGCPercent(GCPercent)
	}
	hookDepth++
}

// leaveHook turns it off again when the last hook returns (waiting for a collection under way to end, which may
// read the clock: this runs in the hook, where imports are allowed).
func leaveHook() {
	hookDepth--
	if hookDepth == 0 {
		debug.SetGCPercent(-1)
	}
}

// HostCall runs f, a call of a host import that returns memory the host allocates in the plugin, with the collector
// off.
func HostCall(f func()) {
	if hookDepth > 0 {
		debug.SetGCPercent(-1)
		defer debug.SetGCPercent(GCPercent)
	}
	f()
}
