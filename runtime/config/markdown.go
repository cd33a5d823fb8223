package config

import (
	"bytes"
	"errors"
	"strings"
)

// The README's configuration table sits between these lines; make config-doc (tools/configdoc)
// rewrites it and a test checks it.
const (
	TableStart = "<!-- config-table:start -->"
	TableEnd   = "<!-- config-table:end -->"
)

// MarkdownTable returns the table of every setting in Markdown, --config first: setting, flag,
// environment variable, config file key, default, programs, meaning; secrets are marked.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| setting | flag | environment variable | config file key | default | used by | meaning |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	row := func(cells ...string) {
		for i := range cells {
			cells[i] = strings.ReplaceAll(cells[i], "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	row("config file", code("--"+ConfigFlag+" FILE"), code(ConfigEnv), "—", "none", Both.String(),
		"Optional YAML file of settings; a file so named must exist. Its keys are the settings' names; "+
			"an unknown key or a value of the wrong type is an error.")
	for _, s := range Settings() {
		flagCell := "—"
		switch {
		case s.Flag != "" && s.Subcommand != "":
			flagCell = code("--"+s.Flag) + " (" + code(s.Subcommand) + ")"
		case s.Flag != "":
			flagCell = code("--" + s.Flag)
		}
		envCell, keyCell := "—", "—"
		if s.Env != "" {
			envCell = code(s.Env)
		}
		if s.Key != "" {
			keyCell = code(s.Key)
		}
		def := "empty"
		if s.Default != "" {
			def = code(s.Default)
		}
		help := s.Help
		if s.Secrecy != Public {
			help = "**Secret.** " + help
		}
		row(code(s.Name), flagCell, envCell, keyCell, def, s.Commands.String(), help)
	}
	return b.String()
}

func code(s string) string { return "`" + s + "`" }

// ReplaceTable returns doc with the text between the TableStart and TableEnd lines replaced by
// MarkdownTable.
func ReplaceTable(doc []byte) ([]byte, error) {
	before, rest, ok := bytes.Cut(doc, []byte(TableStart+"\n"))
	if !ok {
		return nil, errors.New("no line " + TableStart)
	}
	_, after, ok := bytes.Cut(rest, []byte(TableEnd))
	if !ok {
		return nil, errors.New("no line " + TableEnd + " after " + TableStart)
	}
	var out bytes.Buffer
	out.Write(before)
	out.WriteString(TableStart + "\n")
	out.WriteString(MarkdownTable())
	out.WriteString(TableEnd)
	out.Write(after)
	return out.Bytes(), nil
}

// TableIn returns the text between the TableStart and TableEnd lines of doc.
func TableIn(doc []byte) (string, error) {
	_, rest, ok := bytes.Cut(doc, []byte(TableStart+"\n"))
	if !ok {
		return "", errors.New("no line " + TableStart)
	}
	table, _, ok := bytes.Cut(rest, []byte(TableEnd))
	if !ok {
		return "", errors.New("no line " + TableEnd + " after " + TableStart)
	}
	return string(table), nil
}
