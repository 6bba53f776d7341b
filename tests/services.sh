#!/usr/bin/env bash
# Start the local PostgreSQL and MariaDB servers the engine tests use, if they are not running.
# Idempotent: safe to run when both are up already. .ci/run should call it before pytest.
set -u
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
fi
if ! mariadb-admin -h 127.0.0.1 -u root status >/dev/null 2>&1; then
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
fi
for _ in $(seq 1 30); do
    pg_isready -q -h 127.0.0.1 -p 5432 && mariadb-admin -h 127.0.0.1 -u root status >/dev/null 2>&1 && exit 0
    sleep 1
done
echo "services.sh: PostgreSQL or MariaDB did not come up" >&2
exit 0
