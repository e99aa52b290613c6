// Command redsync-bench drives redsync (Go) through the bench's lock+unlock
// cycle and prints the figures as the other bench clients do (bench/README.md).
//
// --variant default: redsync as configured out of the box, which waits for
// every node's reply; --variant failfast: WithFailFast(true), which returns
// once a quorum is decided. One try per lock (WithTries(1)): no retries.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

type result struct {
	Client    string  `json:"client"`
	Mode      string  `json:"mode"`
	N         int     `json:"n"`
	Keys      int     `json:"keys"`
	Threads   int     `json:"threads"`
	OK        int     `json:"ok"`
	Failed    int     `json:"failed"`
	CPUUserUs int64   `json:"cpu_user_us"`
	CPUSysUs  int64   `json:"cpu_sys_us"`
	WallS     float64 `json:"wall_s"`
	LockNs    []int64 `json:"lock_ns"`
	CycleNs   []int64 `json:"cycle_ns"`
}

func cpuUs() (int64, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() / 1000, ru.Stime.Nano() / 1000
}

func main() {
	nodes := flag.String("nodes", "", "comma-separated redis:// URIs")
	cycles := flag.Int("cycles", 1000, "measured cycles")
	warmup := flag.Int("warmup", 100, "cycles before measuring")
	lease := flag.Int("lease", 10000, "lease in ms")
	keys := flag.Int("keys", 1, "resources per lock (redsync has one)")
	prefix := flag.String("prefix", "bench", "resource name prefix")
	variant := flag.String("variant", "default", "default or failfast")
	flag.Parse()
	if *nodes == "" || *keys != 1 || (*variant != "default" && *variant != "failfast") {
		fmt.Fprintln(os.Stderr, "redsync-bench: --nodes URI[,URI...]; one key; --variant default|failfast")
		os.Exit(64)
	}

	var pools []redis.Pool
	uris := strings.Split(*nodes, ",")
	for _, uri := range uris {
		opt, err := goredislib.ParseURL(uri)
		if err != nil {
			panic(err)
		}
		pools = append(pools, goredis.NewPool(goredislib.NewClient(opt)))
	}
	rs := redsync.New(pools...)
	mutexOpts := []redsync.Option{
		redsync.WithExpiry(time.Duration(*lease) * time.Millisecond),
		redsync.WithTries(1),
	}
	client := "redsync"
	if *variant == "failfast" {
		mutexOpts = append(mutexOpts, redsync.WithFailFast(true))
		client = "redsync-failfast"
	}
	name := *prefix + ":0"

	cycle := func() (time.Duration, time.Duration, bool) {
		m := rs.NewMutex(name, mutexOpts...)
		t0 := time.Now()
		if err := m.Lock(); err != nil {
			return 0, 0, false
		}
		t1 := time.Now()
		ok, err := m.Unlock()
		return t1.Sub(t0), time.Since(t0), ok && err == nil
	}

	for i := 0; i < *warmup; i++ {
		cycle()
	}
	r := result{Client: client, Mode: "cycle", N: len(uris), Keys: 1, Threads: 1,
		LockNs: make([]int64, 0, *cycles), CycleNs: make([]int64, 0, *cycles)}
	u0, s0 := cpuUs()
	w0 := time.Now()
	for i := 0; i < *cycles; i++ {
		lock, total, ok := cycle()
		if !ok {
			r.Failed++
			continue
		}
		r.OK++
		r.LockNs = append(r.LockNs, lock.Nanoseconds())
		r.CycleNs = append(r.CycleNs, total.Nanoseconds())
	}
	r.WallS = time.Since(w0).Seconds()
	u1, s1 := cpuUs()
	r.CPUUserUs, r.CPUSysUs = u1-u0, s1-s0
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		panic(err)
	}
}
