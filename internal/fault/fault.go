// Package fault lets crash tests kill the process at named points of an update.
//
// When the environment variable TRIBUTARY_FAULT names a point (for example
// "apply.after-data-files"), reaching that point sends SIGKILL to the process itself, exactly as a
// power cut or an OOM kill would end it. Unset, Point does nothing.
package fault

import (
	"os"
	"syscall"
)

// Point kills the process with SIGKILL if TRIBUTARY_FAULT equals name.
func Point(name string) {
	if v := os.Getenv("TRIBUTARY_FAULT"); v != "" && v == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not instantaneous; never return
	}
}
