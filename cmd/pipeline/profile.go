package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// profiles holds the --cpuprofile and --memprofile paths of one invocation and, once started,
// the open CPU profile. Both files are in pprof's format (go tool pprof FILE).
type profiles struct {
	cpuPath, memPath string
	cpu              *os.File
}

// addFlags declares --cpuprofile and --memprofile on every command of root.
func (p *profiles) addFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&p.cpuPath, "cpuprofile", "", "write a CPU profile of the command to `FILE` (go tool pprof FILE)")
	f.StringVar(&p.memPath, "memprofile", "", "write a heap profile (allocations since start, and what is live at the end) to `FILE` when the command ends")
}

// start begins CPU profiling when --cpuprofile was given. A file that cannot be created is a
// usage error naming it.
func (p *profiles) start() error {
	if p.memPath != "" {
		runtime.MemProfileRate = 64 * 1024 // finer than the default 512 KiB: small rows show up
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

// stop ends the CPU profile and writes the heap profile; it runs whether the command succeeded
// or not, so a failed update can be profiled too.
func (p *profiles) stop() error {
	var first error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Close(); err != nil {
			first = fmt.Errorf("--cpuprofile: %w", err)
		}
		p.cpu = nil
	}
	if p.memPath != "" {
		f, err := os.Create(p.memPath)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil && first == nil {
			first = fmt.Errorf("--memprofile: %w", err)
		}
	}
	return first
}
