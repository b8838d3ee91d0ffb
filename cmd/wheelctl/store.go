package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/wheelmq/wheelmq/storage/inspect"
)

// newStoreCmd is "wheelctl store": offline, read-only inspection of a data
// directory (package storage/inspect), as bbolt's check and page commands.
// Register it in newRoot with add("admin", newStoreCmd(g)).
func newStoreCmd(g *globals) *cobra.Command {
	return groupCmd("store", "Inspect a data directory offline: verify every file, dump CommitLog records",
		newStoreVerifyCmd(g), newStoreDumpCmd(g))
}

// newStoreVerifyCmd is "wheelctl store verify DIR".
func newStoreVerifyCmd(g *globals) *cobra.Command {
	var opts inspect.Options
	c := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check every record of every file of a data directory (read-only)",
		Long: `Reads every file of the data directory DIR without changing or locking anything: every
CommitLog entry (framing, CRC32C, offset, message layout and body CRC), every consume-queue unit
(and that it leads to its message), every TimerLog entry, the timer checkpoint and snapshot, the
stage checkpoint, topics.json and consumerOffset.json. Prints a summary per part and one line per
finding: DAMAGE (data that fails its checks) or warning (state recovery handles, such as a torn
tail after a crash). Exit code 1 when anything is damaged. Run it on a stopped broker's directory
or a copy: a running broker's tails may show as warnings.`,
		Args: exactArgs("DIR"),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := dataDirArg(args[0]); err != nil {
				return err
			}
			r, err := inspect.Verify(args[0], opts)
			if err != nil {
				return withHint(err, "is it a wheelmq data directory (the broker's --data)?")
			}
			if err := inspect.WriteReport(g.stdout, r); err != nil {
				return err
			}
			if r.Damaged() {
				return withHint(fmt.Errorf("%s is damaged", args[0]),
					"look at the records with 'wheelctl store dump DIR --offset N'; with --on-corruption=skip the broker passes over them")
			}
			return nil
		},
	}
	c.Flags().Int64Var(&opts.SegmentSize, "segment-size", 0,
		"CommitLog segment size in bytes (default: from the segment names, else 1 GiB)")
	c.Flags().BoolVar(&opts.SkipUnits, "skip-units", false,
		"do not check each consume-queue unit against its CommitLog record (faster)")
	return c
}

// newStoreDumpCmd is "wheelctl store dump DIR --offset N [--count K]".
func newStoreDumpCmd(g *globals) *cobra.Command {
	var opts inspect.Options
	var offset int64
	var count int
	c := &cobra.Command{
		Use:   "dump DIR --offset N [--count K]",
		Short: "Print CommitLog records at an offset, field by field (read-only)",
		Long: `Prints K CommitLog entries of the data directory DIR from the global offset N on: for
each record its position (segment file and byte), size, CRC32C and body CRC state, then every
field (topic, queue, queue and physical offsets, timestamps, hosts, properties, a body preview).
A damaged span is shown with the reason, a hex preview and the fields as stored (unverified), and
the dump goes on with the next entry that verifies.`,
		Args: exactArgs("DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("offset") {
				return usagef("--offset is required")
			}
			if count < 1 {
				return usagef("--count %d: want at least 1", count)
			}
			if err := dataDirArg(args[0]); err != nil {
				return err
			}
			return inspect.Dump(g.stdout, args[0], offset, count, opts)
		},
	}
	c.Flags().Int64Var(&offset, "offset", 0, "global CommitLog offset of the first entry (required)")
	c.Flags().IntVar(&count, "count", 1, "number of entries to print")
	c.Flags().Int64Var(&opts.SegmentSize, "segment-size", 0,
		"CommitLog segment size in bytes (default: from the segment names, else 1 GiB)")
	return c
}

// dataDirArg refuses, as a usage error, a DIR argument that names a file:
// said plainly rather than as the commitlog inside it that cannot open.
func dataDirArg(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return usagef("%s is a file, not a directory: give the broker's data directory (its --data)", dir)
	}
	return nil
}
