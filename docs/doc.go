// Package docs holds the user documentation of flink-admission (Markdown files in this
// directory and the repository's README.md). Its tests run the commands the documentation
// shows and compare what it states — flags, rules, defaults, metrics, paths — with the
// program, so the documentation cannot drift from it.
package docs
