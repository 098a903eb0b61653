// Package watch turns file-system notifications (fsnotify) on folders into a channel of events
// for continuous and dev mode. Folders are watched, never single files, since editors save by
// writing a new file and renaming it over the old one; folders are watched recursively, new
// sub-folders included. Debounce merges a burst of events into one batch. Consumers take a
// channel of events, so tests feed them synthetic ones.
package watch
