package fakeflink

import "strings"

// ApplicationArgs is what Flink 2's application-mode entrypoint
// (StandaloneApplicationClusterEntryPoint, its StandaloneApplicationClusterConfigurationParserFactory)
// takes from its command line.
type ApplicationArgs struct {
	JobID, ClassName, FromSavepoint string
	AllowNonRestoredState           bool
	Jars                            []string
	// Dynamic are the -Dkey=value properties, which beat the configuration file.
	Dynamic map[string]string
	// ProgramArgs are what main() gets: everything from the first argument the parser does
	// not know on.
	ProgramArgs []string
}

// applicationOptions are the entrypoint's options by every name they go by, with whether
// each takes a value. --jars takes any number (entrypointJars); Flink 2 has no --host.
var applicationOptions = map[string]bool{
	"c": true, "configDir": true,
	"j": true, "job-classname": true,
	"jid": true, "job-id": true,
	"s": true, "fromSavepoint": true,
	"n": false, "allowNonRestoredState": false,
	"jars": true,
}

// optionName is the option a token names, if it names one the parser knows ("-D" included).
func optionName(tok string) (name, inline string, ok bool) {
	switch {
	case strings.HasPrefix(tok, "-D") && len(tok) > 2:
		return "D", tok[2:], true
	case strings.HasPrefix(tok, "--"):
		name, inline, _ = strings.Cut(tok[2:], "=")
	case strings.HasPrefix(tok, "-") && len(tok) > 1:
		name = tok[1:]
	default:
		return "", "", false
	}
	_, ok = applicationOptions[name]
	return name, inline, ok
}

// ParseApplicationArgs parses args as the entrypoint's parser does (commons-cli's
// DefaultParser, stopping at the first argument it does not know): an unknown option, or the
// first argument that is not an option, ends the options, and it and everything after it
// go to main(). --jars takes every following argument up to the next option it knows.
func ParseApplicationArgs(args []string) ApplicationArgs {
	var a ApplicationArgs
	for i := 0; i < len(args); i++ {
		tok := args[i]
		if tok == "--" {
			a.ProgramArgs = append(a.ProgramArgs, args[i+1:]...)
			return a
		}
		name, inline, ok := optionName(tok)
		if !ok {
			a.ProgramArgs = append(a.ProgramArgs, args[i:]...)
			return a
		}
		value := func() string {
			if inline != "" {
				return inline
			}
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch name {
		case "D":
			k, v, _ := strings.Cut(inline, "=")
			if a.Dynamic == nil {
				a.Dynamic = map[string]string{}
			}
			a.Dynamic[k] = v
		case "jars":
			if inline != "" {
				a.Jars = append(a.Jars, inline)
			}
			for i+1 < len(args) {
				if _, _, known := optionName(args[i+1]); known {
					break
				}
				i++
				a.Jars = append(a.Jars, args[i])
			}
		case "j", "job-classname":
			a.ClassName = value()
		case "jid", "job-id":
			a.JobID = value()
		case "s", "fromSavepoint":
			a.FromSavepoint = value()
		case "n", "allowNonRestoredState":
			a.AllowNonRestoredState = true
		default:
			value()
		}
	}
	return a
}
