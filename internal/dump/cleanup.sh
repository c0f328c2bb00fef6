#!/bin/sh
# Mooring's cleanup, for a Backup deleted with cleanupPolicy Delete: removes the Backup's
# dumps, <DUMP_OWNER>-<timestamp>.sql.gz, and its unfinished ones under $BACKUP_DIR, then
# the directory itself when nothing else is left in it. Other Backups' dumps (a shared
# existingClaim), final snapshots and other files are not this Backup's and stay.
# Without DUMP_OWNER every dump goes (*.sql.gz, final snapshots included).
#
# Then it reports what is left in the whole volume, $VOLUME_ROOT (default $BACKUP_DIR),
# into $REPORT_FILE when set (the pod's termination message): a first line foreign=<n>
# (foreign=unknown when the volume cannot be listed), then up to 20 of the files, relative
# to the volume. Mooring deletes a volume it made only on foreign=0: anything left there
# (a DatabaseCluster's final snapshot, a file somebody copied in) is not the Backup's to
# delete. Empty directories and lost+found (the filesystem's own) do not count.
set -eu
: "${BACKUP_DIR:?}"
root="${VOLUME_ROOT:-$BACKUP_DIR}"

report() {
	if [ -n "${REPORT_FILE:-}" ]; then
		printf '%s\n' "$@" >"$REPORT_FILE"
	fi
}

n=0
if [ -d "$BACKUP_DIR" ]; then
	own="${DUMP_OWNER:+$DUMP_OWNER-}"
	ts='[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z'
	for f in "$BACKUP_DIR"/*.sql.gz "$BACKUP_DIR"/.*.sql.gz.partial "$BACKUP_DIR"/.*.sql.gz.status; do
		[ -e "$f" ] || continue
		if [ -n "$own" ]; then
			case "${f##*/}" in
			"$own"$ts.sql.gz | ."$own"$ts.sql.gz.partial | ."$own"$ts.sql.gz.status) ;;
			*) continue ;;
			esac
		fi
		rm -f "$f"
		n=$((n + 1))
	done
	rmdir "$BACKUP_DIR" 2>/dev/null || true
	echo "cleanup: removed $n files from $BACKUP_DIR"
else
	echo "cleanup: $BACKUP_DIR does not exist; nothing to remove"
fi

if [ ! -d "$root" ]; then
	report "foreign=0"
	exit 0
fi
# A listing that fails (a directory the Job may not read) proves nothing: the volume is
# kept, but the dumps are gone and the cleanup itself succeeded.
if ! left=$(find "$root" -path "$root/lost+found" -prune -o ! -type d -print); then
	echo "cleanup: cannot list everything in $root, so it may hold files that are not this Backup's"
	report "foreign=unknown"
	exit 0
fi
if [ -z "$left" ]; then
	report "foreign=0"
	exit 0
fi
count=$(printf '%s\n' "$left" | wc -l | tr -d ' ')
rel=$(printf '%s\n' "$left" | sed "s|^$root/||" | head -n 20)
echo "cleanup: $count files in $root are not this Backup's dumps and stay:"
printf '%s\n' "$rel"
# One argument per line of $rel: split on newlines only, and never glob.
(
	IFS='
'
	set -f
	# shellcheck disable=SC2086
	report "foreign=$count" $rel
)
