package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/jsonc"
)

// Settings files of the clients that can turn hooks off, as the clients
// name them; variables so that tests can point the system-wide ones
// elsewhere.
var (
	claudeManaged = "/etc/claude-code/managed-settings.json"
	geminiSystem  = "/etc/gemini-cli/settings.json"
)

// HooksOff says which of the agent's own settings turns wiggum's hooks off,
// or "" when none does as far as these files tell: claude's
// disableAllHooks (and a managed allowManagedHooksOnly), gemini's
// hooksConfig.enabled false or a hooksConfig.disabled entry naming
// wiggum's hook, codex's hooks feature set false (in the project's
// .codex/config.toml or the user's). Each client's precedence between its
// files is followed, and a file it ignores sets nothing. Settings given
// another way (on the command line, by a profile, through the
// environment) are not read here; the run's check that the guard sees the
// agent's shell commands catches those.
func HooksOff(agent, root, home string) string {
	switch agent {
	case "claude":
		// The managed settings: the file, then the drop-ins beside it
		// (managed-settings.d/*.json, in name order, each over the last),
		// which Claude Code 2.1 reads too; a key set there was missed.
		managed, from := jsonDoc(claudeManaged), map[string]string{}
		for k := range managed {
			from[k] = claudeManaged
		}
		dropIns, _ := filepath.Glob(filepath.Join(filepath.Dir(claudeManaged), "managed-settings.d", "*.json"))
		sort.Strings(dropIns)
		for _, path := range dropIns {
			for k, v := range jsonDoc(path) {
				if managed == nil {
					managed = map[string]any{}
				}
				managed[k], from[k] = v, path
			}
		}
		if managed["allowManagedHooksOnly"] == true {
			return from["allowManagedHooksOnly"] + " sets allowManagedHooksOnly (only managed hooks run)"
		}
		// The first file that sets the key decides: managed, local,
		// project, user.
		for i, path := range []string{claudeManaged, filepath.Join(root, ".claude", "settings.local.json"),
			filepath.Join(root, ".claude", "settings.json"), filepath.Join(UserDir("claude", home), "settings.json")} {
			doc := managed
			if i > 0 {
				doc = strictJSONDoc(path)
			} else if from["disableAllHooks"] != "" {
				path = from["disableAllHooks"]
			}
			if v, ok := doc["disableAllHooks"]; ok {
				if v == true {
					return path + " sets disableAllHooks"
				}
				return ""
			}
		}
	case "gemini":
		// hooksConfig.disabled lists are merged from every file; for
		// enabled the system file overrides the workspace, which
		// overrides the user's.
		files := []string{geminiSystem, filepath.Join(root, ".gemini", "settings.json"), filepath.Join(UserDir("gemini", home), "settings.json")}
		cfgs := make([]map[string]any, len(files))
		for i, path := range files {
			cfgs[i], _ = jsonDoc(path)["hooksConfig"].(map[string]any)
			list, _ := cfgs[i]["disabled"].([]any)
			for _, d := range list {
				if s, _ := d.(string); s == "wiggum" || strings.Contains(s, "wiggum hook") {
					return fmt.Sprintf("%s lists %q in hooksConfig.disabled", path, s)
				}
			}
		}
		for i, cfg := range cfgs {
			if enabled, set := cfg["enabled"].(bool); set {
				if !enabled {
					return files[i] + " sets hooksConfig.enabled to false"
				}
				return ""
			}
		}
	case "codex":
		// The project's .codex/config.toml, which codex reads in a
		// trusted project (wiggum runs it with --trust), over the user's.
		dir := os.Getenv("CODEX_HOME")
		if dir == "" {
			dir = filepath.Join(home, ".codex")
		}
		for _, path := range []string{filepath.Join(root, ".codex", "config.toml"), filepath.Join(dir, "config.toml")} {
			if on, set := tomlBool(path, "features", "hooks", "codex_hooks"); set {
				if !on {
					return path + " turns the hooks feature off ([features] hooks = false)"
				}
				return ""
			}
		}
	}
	return ""
}

// jsonDoc reads a JSON settings file's top level; nil when the file is not
// there or is not a JSON object (the client will say so itself).
func jsonDoc(path string) map[string]any {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var doc map[string]any
	if json.Unmarshal(data, &doc) != nil && json.Unmarshal(jsonc.Blank(data), &doc) != nil {
		return nil
	}
	return doc
}

// strictJSONDoc reads a JSON settings file's top level as Claude Code
// reads its settings: nil when the file is not there or is not strict
// JSON, which claude ignores whole (ignoredBy).
func strictJSONDoc(path string) map[string]any {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var doc map[string]any
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	return doc
}

// tomlBool reads table.key = true or false for one of the keys from a
// TOML file, as `[table]` then `key = false`, or as `table.key = false` at
// the top; set is false when the file sets none of them so, and a false
// for any of them is false. Only these plain forms are read; others are
// left to the run's check.
func tomlBool(path, table string, keys ...string) (value, set bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, false
	}
	current := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if strings.HasPrefix(line, "[") {
			current = strings.TrimSpace(strings.Trim(line, "[]"))
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		v = strings.TrimSpace(v)
		if !ok || (v != "false" && v != "true") {
			continue
		}
		k = strings.TrimSpace(k)
		for _, key := range keys {
			if (current == table && k == key) || (current == "" && k == table+"."+key) {
				if v == "false" {
					return false, true
				}
				value, set = true, true
			}
		}
	}
	return value, set
}
