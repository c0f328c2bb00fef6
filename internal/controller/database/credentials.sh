#!/bin/sh
# Mooring's credentials check: waits until the database takes the application user's
# password its credentials Secret holds now. The instance managers give it to the
# database themselves, over each instance's local socket, once the kubelet has updated
# the mounted Secret (about a minute): the password never crosses the network in an
# ALTER statement, and no superuser logs in from here. This Job only logs in as the
# application user, over TLS with the server's certificate and name verified, and
# succeeds once that works; bound Apps then roll onto the new password. It runs in the
# cluster's server image, with its client: psql, mysql, or mariadb.
#
#   DB_ENGINE                  postgresql, mysql or mariadb
#   DB_HOST, DB_PORT           the primary
#   DB_CA_FILE                 the CA the server is verified with; empty: no TLS (tests)
#   APP_USERNAME, APP_PASSWORD the application user and its new password
#   WAIT_SECONDS               how long to keep trying (default 480)
#
# Every value comes from the environment (secretKeyRef). The password reaches the client
# through its environment variable, never an argument (visible in the process list), and
# is never printed.
set -eu
: "${DB_ENGINE:?}" "${DB_HOST:?}" "${DB_PORT:?}" "${APP_USERNAME:?}" "${APP_PASSWORD:?}"
ca=${DB_CA_FILE:-}
wait_seconds=${WAIT_SECONDS:-480}

login() {
	case "$DB_ENGINE" in
	postgresql)
		if [ -n "$ca" ]; then
			export PGSSLMODE=verify-full PGSSLROOTCERT="$ca"
		fi
		PGPASSWORD=$APP_PASSWORD PGCONNECT_TIMEOUT=10 psql --no-psqlrc --quiet --no-password --host="$DB_HOST" \
			--port="$DB_PORT" --username="$APP_USERNAME" --dbname=postgres --command='SELECT 1' >/dev/null ;;
	mysql)
		set -- --host="$DB_HOST" --port="$DB_PORT" --user="$APP_USERNAME" --protocol=TCP --connect-timeout=10
		if [ -n "$ca" ]; then
			set -- "$@" --ssl-ca="$ca" --ssl-mode=VERIFY_IDENTITY
		fi
		MYSQL_PWD=$APP_PASSWORD mysql "$@" --execute='SELECT 1' >/dev/null ;;
	mariadb)
		set -- --host="$DB_HOST" --port="$DB_PORT" --user="$APP_USERNAME" --protocol=TCP --connect-timeout=10
		if [ -n "$ca" ]; then
			set -- "$@" --ssl --ssl-ca="$ca" --ssl-verify-server-cert
		fi
		MYSQL_PWD=$APP_PASSWORD mariadb "$@" --execute='SELECT 1' >/dev/null ;;
	*)
		echo "credentials: unknown DB_ENGINE $DB_ENGINE" >&2
		exit 2 ;;
	esac
}

start=$(date +%s)
while ! login 2>/tmp/credentials-login.err; do
	if [ $(($(date +%s) - start)) -ge "$wait_seconds" ]; then
		# The client's last words name the cause (a refused password, an unverifiable
		# certificate); they never hold the password.
		tail -n 2 /tmp/credentials-login.err >&2 || true
		echo "credentials: the application user named in the credentials Secret could not log in with its password for" \
			"${wait_seconds}s: the database has not taken it (does that user exist? /status of each instance, and the" \
			"instance managers' logs, say why)" >&2
		exit 1
	fi
	# The instance managers apply the Secret once the kubelet has updated their volume.
	sleep 5
done
echo "credentials: the database takes the application user's password of the credentials Secret"
