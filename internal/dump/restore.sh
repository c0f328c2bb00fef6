#!/bin/sh
# Mooring's restore: loads one dump that backup.sh made into a cluster's primary,
# connected as the superuser, with the client of the cluster's own server image (the one
# whose dump format it reads): psql, mysql or mariadb. The primary, because the replicas
# follow it.
#
#   PostgreSQL       the dump is pg_dump's plain SQL of one database, without CREATE
#                    DATABASE: it is loaded into $DB_NAME (default postgres), the database
#                    it was taken from, which must exist, as must the roles that own its
#                    objects. One transaction, stopped at the first error: a dump that
#                    does not load (its tables exist already, a role is missing) changes
#                    nothing.
#   MySQL, MariaDB   the dump is mysqldump's or mariadb-dump's of every database the
#                    backup user saw: it creates the databases it needs and replaces the
#                    tables it holds (DROP TABLE IF EXISTS, then CREATE). The client stops
#                    at the first error; DDL cannot be rolled back there, so the script
#                    takes back what the load made: every database and table (views
#                    included) that was not there before is dropped, leaving no partial
#                    database (the system databases, mysql above all, are not touched).
#
# Before loading, the dump's header (pg_dump's "Dumped from database version", the dump
# tools' "Server version") is compared with the server: a dump of another engine, or of a
# newer version than the server's (which may use what the server lacks), is refused
# before a statement runs. A file without such a header is loaded as it is.
#
#   DB_ENGINE                  postgresql, mysql or mariadb
#   DB_HOST, DB_PORT, DB_USER  the primary, and the superuser (postgres or root); its
#                              password in PGPASSWORD or MYSQL_PWD
#   DB_NAME                    PostgreSQL only: the database to load the dump into
#   RESTORE_FILE               the dump, <...>.sql.gz, in the backup volume (read-only);
#                              when empty, the newest <RESTORE_OWNER>-<timestamp>.sql.gz
#                              in RESTORE_DIR
#   REPORT_FILE                when set, the last line printed (success or failure) is
#                              written there too: the pod's termination message
#
# Success prints "restore: restored <file> sha256=<hex> ...". A failure prints one line
# "restore: <file>: <cause>: <detail>" and exits with the cause's status:
#   2  misconfigured (a variable missing, an unknown engine, no client in the image)
#   3  file missing (or unreadable)
#   4  not gzip (or a truncated one)
#   5  SQL error: the server refused a statement of the dump
#   6  cannot connect: the server could not be reached, refused the login, or the
#      connection broke; the only cause a retry may cure
#   7  incompatible dump: its header names another engine or a newer version
# The password is never an argument of a process, nor printed; neither is the dump's
# data, except what the server's first error message quotes.
set -eu
: "${DB_ENGINE:?}" "${DB_HOST:?}" "${DB_PORT:?}" "${DB_USER:?}"
if [ -z "${RESTORE_FILE:-}" ]; then
	# No file named: the newest dump of RESTORE_OWNER in RESTORE_DIR. Dump names end in a
	# UTC timestamp that sorts as it reads, and a glob expands sorted, so the last match
	# is the newest; the timestamp pattern keeps out another Backup whose name starts
	# with this one's ("orders-nightly-..." is not a dump of "orders").
	: "${RESTORE_DIR:?}" "${RESTORE_OWNER:?}"
	for f in "$RESTORE_DIR/$RESTORE_OWNER"-*.sql.gz; do
		case "${f#"$RESTORE_DIR/$RESTORE_OWNER"-}" in
		[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z.sql.gz)
			[ -f "$f" ] && RESTORE_FILE=$f ;;
		esac
	done
	if [ -z "${RESTORE_FILE:-}" ]; then
		file="$RESTORE_DIR/$RESTORE_OWNER-*.sql.gz"
		line="restore: $file: file missing: no dump of Backup $RESTORE_OWNER in the backup volume"
		printf '%s\n' "$line" >&2
		if [ -n "${REPORT_FILE:-}" ]; then printf '%s\n' "$line" >"$REPORT_FILE" || true; fi
		exit 3
	fi
fi
file=$RESTORE_FILE

report() {
	if [ -n "${REPORT_FILE:-}" ]; then
		printf '%s\n' "$1" >"$REPORT_FILE" || true
	fi
}

# fail prints the one line for cause $1 (exit status $2, detail $3) and exits.
fail() {
	line="restore: $file: $1${3:+: $3}"
	printf '%s\n' "$line" >&2
	report "$line"
	exit "$2"
}

case "$DB_ENGINE" in
postgresql) client=psql ;;
mysql) client=mysql ;;
mariadb) client=mariadb ;;
*) fail "misconfigured" 2 "unknown DB_ENGINE $DB_ENGINE" ;;
esac
command -v "$client" >/dev/null 2>&1 || fail "misconfigured" 2 "no $client in this image"

if [ ! -e "$file" ]; then
	fail "file missing" 3 "no such file in the backup volume"
elif [ ! -f "$file" ] || [ ! -r "$file" ]; then
	fail "file missing" 3 "not a regular file this Job (uid $(id -u)) can read"
fi
# The whole file is checked before a statement runs, so that a truncated dump (a volume
# that filled up) is refused rather than half loaded.
gzip -t "$file" 2>/dev/null || fail "not gzip" 4 "not a complete gzip file"
sum=$(sha256sum <"$file")
sum=${sum%% *}

# query prints the server's answer to one statement (no header, no escaping), or fails.
query() {
	case "$DB_ENGINE" in
	postgresql)
		PGCONNECT_TIMEOUT=30 psql --no-psqlrc --quiet --no-password --tuples-only --no-align \
			--host="$DB_HOST" --port="$DB_PORT" --username="$DB_USER" --dbname="${DB_NAME:-postgres}" --command="$1" ;;
	*)
		"$client" --host="$DB_HOST" --port="$DB_PORT" --user="$DB_USER" --protocol=TCP --connect-timeout=30 \
			--batch --skip-column-names --raw --execute="$1" </dev/null ;;
	esac
}

# series_gt A B: version series A ("18", "11.8") is newer than B.
series_gt() {
	[ "$(printf '%s\n%s\n' "$1" "$2" | sort -t. -k1,1n -k2,2n | tail -n 1)" = "$1" ] && [ "$1" != "$2" ]
}

# What the dump says of itself, from its first lines.
header=$(gunzip -c "$file" 2>/dev/null | head -n 40 || true)
dump_engine=
dump_series=
case "$header" in
*"-- PostgreSQL database dump"*)
	dump_engine=postgresql
	dump_series=$(printf '%s\n' "$header" | sed -n 's/^-- Dumped from database version \([0-9][0-9]*\).*/\1/p' | head -n 1) ;;
*"-- MariaDB dump"* | *"-- MySQL dump"*)
	server=$(printf '%s\n' "$header" | sed -n 's/^-- Server version[[:space:]]*//p' | head -n 1)
	case "$server" in
	"") ;;
	*MariaDB*) dump_engine=mariadb ;;
	*) dump_engine=mysql ;;
	esac
	dump_series=$(printf '%s' "$server" | sed -n 's/^\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p') ;;
esac
if [ -n "$dump_engine" ] && [ "$dump_engine" != "$DB_ENGINE" ]; then
	fail "incompatible dump" 7 "it is a dump of $dump_engine${dump_series:+ $dump_series}, and this server is $DB_ENGINE"
fi
if [ -n "$dump_series" ]; then
	case "$DB_ENGINE" in
	postgresql) have=$(query 'SHOW server_version_num' 2>/dev/null) && have=$((have / 10000)) || have= ;;
	*) have=$(query 'SELECT VERSION()' 2>/dev/null | sed -n 's/^\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p') || have= ;;
	esac
	# A server that does not answer here fails the load below, which says why.
	if [ -n "$have" ] && series_gt "$dump_series" "$have"; then
		fail "incompatible dump" 7 "it is a dump of $DB_ENGINE $dump_series, newer than this server's $have, which may not load it; restore into a cluster of version $dump_series or newer"
	fi
fi

# objects lists the databases and tables (views included) outside the system databases,
# one "database" or "database.table" a line.
objects() {
	out=$(query "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
		UNION ALL SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')") || return 1
	printf '%s\n' "$out" | sed '/^$/d' | sort
}

# undo drops what the failed load made: the databases and tables that were not there
# before it (listed in $before). A database that was there loses only its new tables.
undo() {
	# Without the list of what was there before, nothing can be told apart: nothing is dropped.
	[ "$listed" = yes ] || return 1
	objects >"$after" 2>/dev/null || return 1
	{
		echo "SET SESSION FOREIGN_KEY_CHECKS = 0;"
		comm -13 "$before" "$after" | while read -r o; do
			case "$o" in
			*.*)
				db=${o%%.*}
				# A table of a database the load made goes with its database.
				grep -qxF "$db" "$before" || continue
				t=${o#*.}
				printf 'DROP TABLE IF EXISTS `%s`.`%s`;\nDROP VIEW IF EXISTS `%s`.`%s`;\n' \
					"$(printf '%s' "$db" | sed 's/`/``/g')" "$(printf '%s' "$t" | sed 's/`/``/g')" \
					"$(printf '%s' "$db" | sed 's/`/``/g')" "$(printf '%s' "$t" | sed 's/`/``/g')" ;;
			*)
				printf 'DROP DATABASE IF EXISTS `%s`;\n' "$(printf '%s' "$o" | sed 's/`/``/g')" ;;
			esac
		done
	} | "$client" --host="$DB_HOST" --port="$DB_PORT" --user="$DB_USER" --protocol=TCP --connect-timeout=30 --batch >/dev/null 2>&1
}

load() {
	case "$DB_ENGINE" in
	postgresql)
		# --file=- and not plain standard input: --single-transaction only wraps -f and
		# -c. Standard output (the dump's SELECTs, command tags) is noise.
		PGCONNECT_TIMEOUT=30 psql --no-psqlrc --quiet --no-password --set=ON_ERROR_STOP=1 --single-transaction \
			--host="$DB_HOST" --port="$DB_PORT" --username="$DB_USER" --dbname="${DB_NAME:-postgres}" --file=- >/dev/null ;;
	*)
		"$client" --host="$DB_HOST" --port="$DB_PORT" --user="$DB_USER" --protocol=TCP --connect-timeout=30 \
			--batch >/dev/null ;;
	esac
}

# The client's messages go to a file, so that the failure is summed up in one line.
err=$(mktemp)
status=$(mktemp)
listed=no
before=$(mktemp)
after=$(mktemp)
trap 'rm -f "$err" "$status" "$before" "$after"' EXIT
if [ "$DB_ENGINE" != postgresql ]; then
	# What exists before the load, to take back what a failed one made. A server that
	# does not answer here fails the load below, which says why.
	objects >"$before" 2>/dev/null && listed=yes
fi
rc=0
# sh has no pipefail: gunzip's exit status comes back through a file.
(
	set +e
	gunzip -c "$file"
	echo "$?" >"$status"
) | load 2>"$err" || rc=$?

# first is the client's first error line, cut to one line of bounded length.
first=$(grep -E 'ERROR|FATAL|error:' "$err" | head -n 1)
[ -n "$first" ] || first=$(head -n 1 "$err")
first=$(printf '%s' "$first" | tr -d '\r' | cut -c 1-300)
if [ "$rc" != 0 ]; then
	case "$DB_ENGINE" in
	postgresql)
		# psql: 2 is a connection that failed or broke, 3 an error in the script.
		if [ "$rc" = 2 ]; then
			fail "cannot connect" 6 "${first:-psql exit status $rc}"
		fi ;;
	*)
		# Client errors (CR_*, 2000-2999: no connection, connection lost) and a refused
		# login (1044, 1045) are the connection's; any other code is the server's answer
		# to a statement of the dump.
		case "$first" in
		"ERROR 2"[0-9][0-9][0-9]" "* | "ERROR 1044 "* | "ERROR 1045 "*)
			fail "cannot connect" 6 "$first" ;;
		esac ;;
	esac
	if [ "$DB_ENGINE" != postgresql ]; then
		undo || first="$first (and what the load made could not be dropped: check the databases before loading again)"
	fi
	fail "SQL error" 5 "${first:-$client exit status $rc}"
fi
gz=$(cat "$status")
if [ "$gz" != 0 ]; then
	# gzip -t passed, so the file changed or could not be read while it was loaded.
	fail "not gzip" 4 "gunzip failed while loading (exit status $gz)"
fi

where="$DB_ENGINE at $DB_HOST:$DB_PORT"
if [ "$DB_ENGINE" = postgresql ]; then
	where="$where, database ${DB_NAME:-postgres}"
fi
line="restore: restored $file sha256=$sum into $where"
printf '%s\n' "$line"
report "$line"
