package registry

import (
	"fmt"
	"strings"
)

// worldExports is the contract's interfaces the plugin's world exports, comma-separated (scheme,create-strategy,...):
// set by build-plugin.sh when it links the plugin (-ldflags -X). Empty in other builds (the plugin's unit tests).
var worldExports string

// DefinedHook is a hook a resource or the plugin sets, and the interfaces that run it (any one of them exported).
type DefinedHook struct {
	// Where it is set, such as Resource.Default.
	Hook string
	// Such as defaulter.
	Interfaces []string
}

// CheckWorld is CheckWorldExports with the world the build linked in: nothing when it said none.
func CheckWorld(p *Plugin) []string {
	if worldExports == "" {
		return nil
	}
	return CheckWorldExports(p, worldExports)
}

// CheckWorldExports says, for each hook set whose interfaces the world (exporting `exports`, comma-separated)
// exports none of, that it would never run and what to add to the world.
func CheckWorldExports(p *Plugin, exports string) []string {
	if p == nil {
		return nil
	}
	exported := map[string]bool{}
	for _, name := range strings.Split(exports, ",") {
		exported[name] = true
	}
	var problems []string
	check := func(where string, hooks []DefinedHook) {
		for _, h := range hooks {
			runs := false
			for _, i := range h.Interfaces {
				runs = runs || exported[i]
			}
			if !runs {
				problems = append(problems, fmt.Sprintf("%s%s is a hook of the %s interface, which the world does not "+
					"export, so it would never run: add `export wasm-apiserver:plugin/%s@0.1.1;` to the world in wit/ "+
					"(or leave the hook unset)", where, h.Hook, h.Interfaces[0], h.Interfaces[0]))
			}
		}
	}
	for _, r := range p.Resources {
		check(r.Info().Plural+": ", r.Defined())
	}
	var plugin []DefinedHook
	if p.Admit != nil {
		plugin = append(plugin, DefinedHook{"Plugin.Admit", []string{"mutating-admission"}})
	}
	if p.ValidateAdmission != nil {
		plugin = append(plugin, DefinedHook{"Plugin.ValidateAdmission", []string{"validating-admission"}})
	}
	check("", plugin)
	return problems
}
