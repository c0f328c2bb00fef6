package instance

import "testing"

func TestReservedUser(t *testing.T) {
	for _, tc := range []struct {
		engine, name string
		want         bool
	}{
		{"postgresql", "postgres", true}, {"postgresql", "replicator", true}, {"postgresql", "pg_read_all_data", true},
		{"postgresql", "root", false}, {"postgresql", "app", false},
		{"mariadb", "root", true}, {"mariadb", "ROOT", true}, {"mariadb", "replicator", true}, {"mariadb", "mariadb.sys", true},
		{"mysql", "mysql.session", true}, {"mysql", "mysql", true}, {"mysql", "postgres", false}, {"mariadb", "app", false},
	} {
		if got := ReservedUser(tc.engine, tc.name); got != tc.want {
			t.Errorf("ReservedUser(%s, %q) = %v, want %v", tc.engine, tc.name, got, tc.want)
		}
	}
	if err := refuseReserved("mariadb", "replicator"); err == nil {
		t.Error("the manager would give the application the replication user")
	}
}
