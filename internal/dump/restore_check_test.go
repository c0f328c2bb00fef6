package dump

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mooringhq/mooring/internal/testutil/dbserver"
)

// A MariaDB restore checks the dump's header before loading (another engine, a newer
// series: refused, nothing loaded), and a load the server refuses half-way takes back
// what it made: no partial database stays.
func TestRestoreScriptMariaDBChecksFirstAndLeavesNothingHalfLoaded(t *testing.T) {
	m := dbserver.StartMariaDB(t, "root-Pa55word")
	m.Exec(t, `CREATE DATABASE app; CREATE TABLE app.kept (id int); INSERT INTO app.kept VALUES (7);`)
	series := strings.Join(strings.SplitN(strings.TrimSpace(m.Exec(t, "SELECT VERSION()")), ".", 3)[:2], ".")
	dir := t.TempDir()
	env := []string{"DB_ENGINE=mariadb", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(m.Port), "DB_USER=root", "MYSQL_PWD=" + m.RootPassword}
	const schemas = `SELECT GROUP_CONCAT(SCHEMA_NAME ORDER BY SCHEMA_NAME) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ('mysql','information_schema','performance_schema','sys');
		SELECT GROUP_CONCAT(CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) ORDER BY 1) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'app';`
	before := m.Exec(t, schemas)

	header := func(server string) string {
		return "-- MariaDB dump 10.19  Distrib 11.8.2-MariaDB, for debian-linux-gnu (x86_64)\n--\n-- Host: db    Database: \n" +
			"-- ------------------------------------------------------\n-- Server version\t" + server + "\n\n"
	}
	load := "CREATE DATABASE shop;\nCREATE TABLE shop.orders (id int);\nINSERT INTO shop.orders VALUES (1);\n"
	for name, c := range map[string]struct{ dump, detail string }{
		"newer series": {header("99.1.0-MariaDB-1") + load, "newer than this server's " + series},
		"MySQL's dump": {header("8.4.3") + load, "it is a dump of mysql 8.4, and this server is mariadb"},
	} {
		file := writeGzip(t, dir, strings.ReplaceAll(name, " ", "-")+".sql.gz", c.dump)
		r := runRestore(t, m.BinDir, append(env[:len(env):len(env)], "RESTORE_FILE="+file))
		r.expectFailure(t, RestoreIncompatible, "incompatible dump", file)
		if !strings.Contains(r.out, c.detail) {
			t.Errorf("%s: the message does not say %q:\n%s", name, c.detail, r.out)
		}
		if got := m.Exec(t, schemas); got != before {
			t.Errorf("%s: a refused dump changed the server:\n got  %q\n want %q", name, got, before)
		}
	}

	// The same series loads; one refused half-way leaves nothing of what it made: not the
	// new database, not the new table in the existing one, and the existing rows stay.
	halfway := header(series+".0-MariaDB") + load + "CREATE TABLE app.added (id int);\nINSERT INTO app.kept VALUES (8);\nCREATE TABLE shop.orders (id int);\n"
	file := writeGzip(t, dir, "halfway.sql.gz", halfway)
	r := runRestore(t, m.BinDir, append(env[:len(env):len(env)], "RESTORE_FILE="+file))
	r.expectFailure(t, RestoreSQLError, "SQL error", file)
	if got := m.Exec(t, schemas); got != before {
		t.Errorf("a failed load left what it made:\n got  %q\n want %q", got, before)
	}
	if strings.Contains(r.out, "could not be dropped") {
		t.Errorf("the script could not take the load back:\n%s", r.out)
	}
	good := writeGzip(t, dir, "good.sql.gz", header(series+".0-MariaDB")+load)
	if r := runRestore(t, m.BinDir, append(env[:len(env):len(env)], "RESTORE_FILE="+good)); r.code != 0 {
		t.Fatalf("a dump of the server's own series: exit status %d:\n%s", r.code, r.out)
	}
	if got := m.Exec(t, "SELECT id FROM shop.orders"); strings.TrimSpace(got) != "1" {
		t.Errorf("rows after the good load: %q", got)
	}
}

// A PostgreSQL restore refuses a dump of a newer major, or of another engine, before
// loading; a dump of its own major loads (TestRestoreScriptAgainstPostgreSQL).
func TestRestoreScriptPostgreSQLChecksFirst(t *testing.T) {
	pg := dbserver.StartPostgreSQL(t, "superuser-pw")
	major := dbserver.RequirePostgreSQL(t).Major
	dir := filepath.Join(t.TempDir())
	env := []string{"DB_ENGINE=postgresql", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(pg.Port), "DB_USER=postgres", "PGPASSWORD=superuser-pw"}
	for name, c := range map[string]struct{ dump, detail string }{
		"newer major": {"--\n-- PostgreSQL database dump\n--\n\n-- Dumped from database version 99.1 (Debian 99.1-1)\n-- Dumped by pg_dump version 99.1\n\nCREATE TABLE t (id int);\n",
			"it is a dump of postgresql 99, newer than this server's " + major},
		"MariaDB's dump": {"-- MariaDB dump 10.19  Distrib 11.8.2-MariaDB\n-- Server version\t11.8.2-MariaDB\nCREATE TABLE t (id int);\n",
			"it is a dump of mariadb 11.8, and this server is postgresql"},
	} {
		file := writeGzip(t, dir, strings.ReplaceAll(name, " ", "-")+".sql.gz", c.dump)
		r := runRestore(t, pg.BinDir, append(env[:len(env):len(env)], "RESTORE_FILE="+file))
		r.expectFailure(t, RestoreIncompatible, "incompatible dump", file)
		if !strings.Contains(r.out, c.detail) {
			t.Errorf("%s: the message does not say %q:\n%s", name, c.detail, r.out)
		}
		if got := pg.Query(t, "postgres", "SELECT count(*) FROM pg_tables WHERE tablename = 't'"); strings.TrimSpace(got) != "0" {
			t.Errorf("%s: a refused dump created its table", name)
		}
	}
}
