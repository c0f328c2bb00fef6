#!/bin/sh
# Mooring's cleanup, for a Backup deleted with cleanupPolicy Delete: removes the dumps
# (*.sql.gz, final snapshots included) and any unfinished dump under $BACKUP_DIR, then the
# directory itself when nothing else is left in it. Other files are not Mooring's and stay.
set -eu
: "${BACKUP_DIR:?}"
if [ ! -d "$BACKUP_DIR" ]; then
	echo "cleanup: $BACKUP_DIR does not exist; nothing to remove"
	exit 0
fi
n=0
for f in "$BACKUP_DIR"/*.sql.gz "$BACKUP_DIR"/.*.sql.gz.partial "$BACKUP_DIR"/.*.sql.gz.status; do
	[ -e "$f" ] || continue
	rm -f "$f"
	n=$((n + 1))
done
rmdir "$BACKUP_DIR" 2>/dev/null || true
echo "cleanup: removed $n files from $BACKUP_DIR"
