#!/bin/sh
# Mooring's cleanup, for a Backup deleted with cleanupPolicy Delete: removes the Backup's
# dumps, <DUMP_OWNER>-<timestamp>.sql.gz, and its unfinished ones under $BACKUP_DIR, then
# the directory itself when nothing else is left in it. Other Backups' dumps (a shared
# existingClaim), final snapshots and other files are not this Backup's and stay.
# Without DUMP_OWNER every dump goes (*.sql.gz, final snapshots included).
set -eu
: "${BACKUP_DIR:?}"
if [ ! -d "$BACKUP_DIR" ]; then
	echo "cleanup: $BACKUP_DIR does not exist; nothing to remove"
	exit 0
fi
own="${DUMP_OWNER:+$DUMP_OWNER-}"
ts='[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z'
n=0
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
