#!/bin/sh
# Mooring's credentials change: gives the application user of a DatabaseCluster the
# password its credentials Secret holds now, connected to the primary as the superuser.
# The password is set only when the data directory is initialised, so a password changed
# in the Secret afterwards reaches the database only this way. It runs in the cluster's
# server image, with its client: psql, mysql, or mariadb (recent MariaDB images have no
# mysql).
#
#   DB_ENGINE                  postgresql, mysql or mariadb
#   DB_HOST, DB_PORT           the primary
#   ADMIN_USER                 postgres or root (MySQL and MariaDB); its password in
#                              PGPASSWORD or MYSQL_PWD
#   APP_USERNAME, APP_PASSWORD the application user and its new password
#
# Every value comes from the environment (secretKeyRef). The SQL is written by the
# shell's printf builtin into the client's standard input, so no password is ever an
# argument of a process (visible in the process list), and none is printed.
set -eu
: "${DB_ENGINE:?}" "${DB_HOST:?}" "${DB_PORT:?}" "${ADMIN_USER:?}" "${APP_USERNAME:?}" "${APP_PASSWORD:?}"

# quote sets q to $1 with each ' doubled, for use between '...'. The value goes to sed
# through a pipe, not as an argument; the x keeps trailing newlines, which command
# substitution would strip, and the result is not passed through another one.
quote() {
	q=$(printf '%s' "$1" | sed "s/'/''/g"; printf x)
	q=${q%x}
}

postgresql() {
	user=$(printf '%s' "$APP_USERNAME" | sed 's/"/""/g'; printf x)
	user=${user%x}
	quote "$APP_PASSWORD"
	# The server hashes the password (password_encryption). Statement logging is turned
	# off for this session only, so that the password does not reach the server's log
	# even where log_statement is 'ddl' or 'all', or with the error of a failed ALTER.
	printf '%s\n%s\n%s\nALTER ROLE "%s" WITH PASSWORD '"'"'%s'"'"';\n' \
		"SET log_statement = 'none';" "SET log_min_duration_statement = -1;" "SET log_min_error_statement = 'panic';" \
		"$user" "$q" |
		PGCONNECT_TIMEOUT=30 psql --no-psqlrc --quiet --set=ON_ERROR_STOP=1 --host="$DB_HOST" --port="$DB_PORT" \
			--username="$ADMIN_USER" --dbname=postgres --no-password
}

# client is the engine's command-line client; mysql_run runs it as the superuser.
client=mysql
mysql_run() {
	"$client" --host="$DB_HOST" --port="$DB_PORT" --user="$ADMIN_USER" --protocol=TCP --connect-timeout=30 \
		--batch --skip-column-names "$@"
}

mysql_change() {
	# NO_BACKSLASH_ESCAPES: only ' needs escaping, whatever the server's sql_mode.
	mode="SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@sql_mode, ''), 'NO_BACKSLASH_ESCAPES');"
	roles=""
	if [ "$DB_ENGINE" = mariadb ]; then
		# MariaDB writes the statements of this session to its general and slow logs as
		# they are, password included: the session is kept out of them (root may).
		mode="$mode SET SESSION sql_log_off = ON; SET SESSION log_slow_query = OFF;"
		# A role of the same name is listed in mysql.user too, with host ''; it has no
		# password.
		roles=" AND is_role = 'N'"
	fi
	quote "$APP_USERNAME"
	user=$q
	# The user may exist for several hosts ('%', localhost): each gets the password.
	hosts=$(printf "%s\nSELECT host FROM mysql.user WHERE user = '%s'%s;\n" "$mode" "$user" "$roles" | mysql_run --raw)
	if [ -z "$hosts" ]; then
		echo "credentials: the application user named in the Secret does not exist in the database; Mooring changes" \
			"passwords, not user names: put the user name the database was set up with back into the Secret" >&2
		return 1
	fi
	quote "$APP_PASSWORD"
	pw=$q
	{
		printf '%s\n' "$mode"
		printf '%s\n' "$hosts" | while IFS= read -r host; do
			quote "$host"
			if [ "$DB_ENGINE" = mariadb ]; then
				# MariaDB writes ALTER USER ... IDENTIFIED BY to its binary log, and so to
				# every replica's, with the password as it is; SET PASSWORD it writes with
				# the password hashed by the user's authentication plugin.
				printf "SET PASSWORD FOR '%s'@'%s' = PASSWORD('%s');\n" "$user" "$q" "$pw"
			else
				# MySQL writes ALTER USER to its logs and binary log with the password
				# hashed, and the binary log carries it to the replicas; it has no
				# PASSWORD() any more.
				printf "ALTER USER '%s'@'%s' IDENTIFIED BY '%s';\n" "$user" "$q" "$pw"
			fi
		done
	} | mysql_run
}

case "$DB_ENGINE" in
postgresql)
	if ! postgresql; then
		echo "credentials: could not change the application user's password in PostgreSQL at $DB_HOST:$DB_PORT" \
			"(is the superuser password in the admin Secret the database's, and does the user named in the credentials Secret exist?)" >&2
		exit 1
	fi ;;
mysql)
	if ! mysql_change; then
		echo "credentials: could not change the application user's password in MySQL at $DB_HOST:$DB_PORT" >&2
		exit 1
	fi ;;
mariadb)
	client=mariadb
	if ! mysql_change; then
		echo "credentials: could not change the application user's password in MariaDB at $DB_HOST:$DB_PORT" >&2
		exit 1
	fi ;;
*)
	echo "credentials: unknown DB_ENGINE $DB_ENGINE" >&2
	exit 2 ;;
esac
echo "credentials: the application user now has the password of the credentials Secret"
