package instance

import "strconv"

// Memory settings derived from the database container's memory limit (--memory-limit,
// which the operator sets from spec.resources.limits.memory). Without a limit the
// engines keep their own defaults (PostgreSQL's shared_buffers of 128MB) or Mooring's
// fixed ones (MariaDB's pool of 64M), which fit the smallest pod.
//
//   - PostgreSQL: shared_buffers 25% of the limit (the PostgreSQL documentation's
//     starting point: the kernel's page cache does the rest), effective_cache_size 75%
//     (what the planner may assume is cached, shared buffers and page cache together).
//   - MariaDB and MySQL: innodb_buffer_pool_size 50% of a limit under 2 GiB and 70% of a
//     larger one: the pool is InnoDB's cache and write buffer, and the server needs
//     room beside it for connections, sort and join buffers and its own code, which
//     matters more in a small pod.
//
// Values are whole MiB, rounded down, and never under 16 MiB.

const (
	mib               = 1 << 20
	largeLimit        = 2 << 30
	minSetting        = 16 * mib
	defaultInnoDBPool = "64M"
)

// MemorySettings are the server settings of engine for a memory limit of limitBytes (0:
// none), as "name = value" lines of the engine's configuration file.
func MemorySettings(engine string, limitBytes int64) []string {
	switch engine {
	case "postgresql":
		if limitBytes <= 0 {
			return nil
		}
		return []string{
			"shared_buffers = " + mibString(limitBytes/4, "MB"),
			"effective_cache_size = " + mibString(limitBytes*3/4, "MB"),
		}
	case "mariadb", "mysql":
		if limitBytes <= 0 {
			return []string{"innodb_buffer_pool_size = " + defaultInnoDBPool}
		}
		pool := limitBytes / 2
		if limitBytes >= largeLimit {
			pool = limitBytes * 7 / 10
		}
		return []string{"innodb_buffer_pool_size = " + mibString(pool, "M")}
	}
	return nil
}

// mibString is n bytes in whole MiB with the engine's unit suffix, at least minSetting.
func mibString(n int64, unit string) string {
	return strconv.FormatInt(max(n, minSetting)/mib, 10) + unit
}
