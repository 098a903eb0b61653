package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"

	"github.com/spf13/cobra"
)

// profiles holds the --cpuprofile, --memprofile and --trace paths of one invocation and, once
// started, their open files. Both profiles are in pprof's format (go tool pprof FILE); the trace
// is the Go execution tracer's (go tool trace FILE: each goroutine's runs, blocks and syscalls
// over time, which shows what of an update overlaps and what waits).
type profiles struct {
	cpuPath, memPath, tracePath string
	cpu, mem, trace             *os.File
}

// memProfileRate is runtime.MemProfileRate under --memprofile (bytes allocated per sample):
// finer than the default 512 KiB, so that the rows of small batches show up.
const memProfileRate = 64 * 1024

// wantsMemProfile reports whether the command line asks for --memprofile: main sets the
// sampling rate before anything allocates, as runtime.MemProfileRate asks.
func wantsMemProfile(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--memprofile" || strings.HasPrefix(a, "--memprofile=") {
			return true
		}
	}
	return false
}

// addFlags declares --cpuprofile and --memprofile on every command of root.
func (p *profiles) addFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&p.cpuPath, "cpuprofile", "", "write a CPU profile of the command to `FILE` (go tool pprof FILE)")
	f.StringVar(&p.memPath, "memprofile", "", "write a heap profile (allocations since start, and what is live at the end) to `FILE` when the command ends")
	f.StringVar(&p.tracePath, "trace", "", "write an execution trace of the command to `FILE` (go tool trace FILE)")
}

// start creates the profile files and begins CPU profiling and tracing, before the command
// runs: a file that cannot be created, or one path given to two flags, is a usage error naming
// the flag, and nothing runs.
func (p *profiles) start() error {
	flags := []struct{ name, path string }{{"--cpuprofile", p.cpuPath}, {"--memprofile", p.memPath}, {"--trace", p.tracePath}}
	for i, a := range flags {
		for _, b := range flags[i+1:] {
			if a.path != "" && b.path != "" && filepath.Clean(a.path) == filepath.Clean(b.path) {
				return usageError(fmt.Errorf("%s and %s are both %s: give each its own file", a.name, b.name, filepath.Clean(a.path)))
			}
		}
	}
	if p.tracePath != "" {
		f, err := os.Create(p.tracePath)
		if err != nil {
			return usageError(fmt.Errorf("--trace: %w", err))
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return usageError(fmt.Errorf("--trace: %w", err))
		}
		p.trace = f
	}
	if p.memPath != "" {
		f, err := os.Create(p.memPath)
		if err != nil {
			return usageError(fmt.Errorf("--memprofile: %w", err))
		}
		p.mem = f
	}
	if p.cpuPath == "" {
		return nil
	}
	f, err := os.Create(p.cpuPath)
	if err != nil {
		return usageError(fmt.Errorf("--cpuprofile: %w", err))
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return usageError(fmt.Errorf("--cpuprofile: %w", err))
	}
	p.cpu = f
	return nil
}

// stop ends the CPU profile and writes the heap profile (after a garbage collection, so that
// what it shows as live is live at the end); it runs whether the command succeeded or not, so
// that a failed update can be profiled too. It does nothing for profiles start did not create.
func (p *profiles) stop() error {
	var errs []string
	if p.trace != nil {
		trace.Stop()
		if err := p.trace.Close(); err != nil {
			errs = append(errs, fmt.Sprintf("--trace: %v", err))
		}
		p.trace = nil
	}
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Close(); err != nil {
			errs = append(errs, fmt.Sprintf("--cpuprofile: %v", err))
		}
		p.cpu = nil
	}
	if p.mem != nil {
		runtime.GC()
		err := pprof.Lookup("allocs").WriteTo(p.mem, 0)
		if cerr := p.mem.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("--memprofile: %v", err))
		}
		p.mem = nil
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
