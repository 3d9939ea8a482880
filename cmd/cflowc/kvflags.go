package main

import (
	"strings"

	"github.com/cflow-dev/cflow/engine"
	"github.com/urfave/cli/v2"
)

// cacheTypeFlags are --cache-type-k and --cache-type-v (llama.cpp's names
// and values), shared by run, chat, serve, bench, ppl and verify; def is
// the command's default: f16 everywhere but verify, whose default is the
// strict f32 check (docs/TRACE.md, "KV cache types").
func cacheTypeFlags(def engine.KVType) []cli.Flag {
	names := strings.Join(engine.KVTypeNames, ", ")
	return []cli.Flag{
		&cli.StringFlag{Name: "cache-type-k", Aliases: []string{"ctk"}, Value: def.String(), Usage: "KV cache type of the keys: " + names,
			Action: checkCacheType("cache-type-k")},
		&cli.StringFlag{Name: "cache-type-v", Aliases: []string{"ctv"}, Value: def.String(), Usage: "KV cache type of the values: " + names,
			Action: checkCacheType("cache-type-v")},
	}
}

// checkCacheType refuses an unknown type name when the flag is parsed,
// before the command opens anything (cacheTypes reads it again).
func checkCacheType(flag string) func(*cli.Context, string) error {
	return func(c *cli.Context, s string) error {
		if _, err := engine.ParseKVType(s); err != nil {
			return cli.Exit(c.Command.Name+": --"+flag+": "+err.Error(), exitUsage)
		}
		return nil
	}
}

// cacheTypes reads cacheTypeFlags into opt; an unknown name is a usage
// error naming the command and the flag.
func cacheTypes(c *cli.Context, cmd string, opt *engine.Options) error {
	for _, f := range []struct {
		name string
		dst  *engine.KVType
	}{{"cache-type-k", &opt.CacheK}, {"cache-type-v", &opt.CacheV}} {
		t, err := engine.ParseKVType(c.String(f.name))
		if err != nil {
			return cli.Exit(cmd+": --"+f.name+": "+err.Error(), exitUsage)
		}
		*f.dst = t
	}
	return nil
}
