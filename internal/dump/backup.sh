#!/bin/sh
# Mooring's backup: one logical dump of a database, gzipped, written to
# $BACKUP_DIR/<owner>-<timestamp>.sql.gz, then only the newest $KEEP_LAST dumps of that
# owner are kept.
# Credentials come only from the environment (PGPASSWORD, or MYSQL_PWD for MySQL and
# MariaDB), never from a command line, so they do not show in a process list or in the
# pod spec.
#
# It runs in the cluster's server image, whose clients match the server: pg_dump,
# mysqldump (MySQL) or mariadb-dump (MariaDB, whose recent images lack the mysql* names).
#
#   DB_ENGINE                  postgresql, mysql or mariadb
#   DB_HOST, DB_PORT, DB_USER  where and as whom to connect
#   DB_NAME                    the database pg_dump dumps (default postgres); mysqldump
#                              and mariadb-dump dump every database the user can see
#   BACKUP_DIR                 where dumps go; created when missing
#   DUMP_OWNER                 the Backup the dump is for: dumps are named
#                              <DUMP_OWNER>-<timestamp>.sql.gz, and retention counts and
#                              prunes only these, so Backups sharing a directory keep each
#                              other's dumps. Unset: <timestamp>.sql.gz
#   KEEP_LAST                  how many dumps of DUMP_OWNER to keep; 0 keeps all
#   DUMP_PREFIX                put before the timestamp; prefixed dumps (final snapshots)
#                              are never pruned
set -eu
: "${DB_ENGINE:?}" "${DB_HOST:?}" "${DB_PORT:?}" "${DB_USER:?}" "${BACKUP_DIR:?}"
# Dumps hold all the data: readable by the backup user only.
umask 077
mkdir -p "$BACKUP_DIR"
own="${DUMP_OWNER:+$DUMP_OWNER-}"

# One dump at a time per directory: a Backup's scheduled Job and an on-demand one may
# start at once, and would pick the same name and write the same partial file. The
# second waits for the first. The lock is flock(1) on the directory itself (no file to
# leave behind), held until this script exits; the kernel drops it with a pod that dies,
# so it never goes stale. Backups sharing a directory take turns too. An image without
# flock runs unlocked (the operator still starts no on-demand Job while another of the
# Backup's runs).
if command -v flock >/dev/null 2>&1; then
	exec 9<"$BACKUP_DIR"
	if ! flock -n 9; then
		echo "backup: another dump into $BACKUP_DIR is running; waiting for it to finish"
		flock 9
	fi
fi

# Named after the second the dump starts (UTC), so names sort by age. A dump started in
# the same second as an existing one waits for the next second rather than overwrite it.
while :; do
	name="${DUMP_PREFIX:-}${own}$(date -u +%Y%m%dT%H%M%SZ).sql.gz"
	[ -e "$BACKUP_DIR/$name" ] || break
	sleep 1
done
# Written under a hidden name and renamed when complete, so a dump cut short (a killed
# pod, a full volume) is never taken for a backup, nor counted by the retention below.
partial="$BACKUP_DIR/.$name.partial"
status="$BACKUP_DIR/.$name.status"
trap 'rm -f "$partial" "$status"' EXIT

dump() {
	case "$DB_ENGINE" in
	postgresql)
		PGCONNECT_TIMEOUT=30 pg_dump --no-password --host="$DB_HOST" --port="$DB_PORT" \
			--username="$DB_USER" --dbname="${DB_NAME:-postgres}" ;;
	# Neither mysqldump nor mariadb-dump has --connect-timeout (only the mysql and mariadb
	# clients do: given it, they refuse to start); the Job's deadline bounds a dump that
	# cannot connect.
	mysql)
		# --set-gtid-purged=OFF: a dump that restores anywhere, and no FLUSH TABLES (which
		# the application user may not be allowed) to read a consistent GTID set.
		mysqldump --host="$DB_HOST" --port="$DB_PORT" --user="$DB_USER" \
			--single-transaction --no-tablespaces --routines --set-gtid-purged=OFF --all-databases ;;
	mariadb)
		# mariadb-dump writes no GTID position unless asked (--gtid with --master-data),
		# so the dump restores anywhere; it has no --set-gtid-purged, a MySQL option.
		mariadb-dump --host="$DB_HOST" --port="$DB_PORT" --user="$DB_USER" \
			--single-transaction --no-tablespaces --routines --all-databases ;;
	*)
		echo "backup: unknown DB_ENGINE $DB_ENGINE" >&2
		return 2 ;;
	esac
}

# sh has no pipefail: the dump's exit status comes back through a file.
(
	set +e
	dump
	echo "$?" >"$status"
) | gzip -c >"$partial"
rc=$(cat "$status")
if [ "$rc" != 0 ]; then
	echo "backup: $DB_ENGINE dump of $DB_HOST:$DB_PORT failed (exit status $rc); nothing written, nothing pruned" >&2
	exit 1
fi
gzip -t "$partial"
mv "$partial" "$BACKUP_DIR/$name"
echo "backup: wrote $BACKUP_DIR/$name ($(wc -c <"$BACKUP_DIR/$name") bytes)"

# Retention counts and prunes only this owner's own dumps, <owner>-<timestamp>.sql.gz
# (the owner's name is literal in the pattern, and a timestamp has a fixed length, so no
# other Backup's name matches); final snapshots, other Backups' dumps and anything else
# in the directory are left alone.
ts='[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z'
if [ "${KEEP_LAST:-0}" -gt 0 ]; then
	ls -1 "$BACKUP_DIR" | while read -r f; do
		case "$f" in
		"$own"$ts.sql.gz) echo "$f" ;;
		esac
	done | sort -r | tail -n "+$((KEEP_LAST + 1))" |
		while read -r old; do
			rm -f "$BACKUP_DIR/$old"
			echo "backup: pruned $old (keeping the newest $KEEP_LAST)"
		done
fi
