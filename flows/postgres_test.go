package flows

import (
	"context"
	"testing"

	"tributary/internal/pgtest"
	"tributary/spec"
)

// TestPGPublicationShared: the sources of a pipeline run in parallel, so one that shares a
// publication may find it missing and then fail to create it, another source having made it
// meanwhile. That is no error: the table is added to the publication the other made.
func TestPGPublicationShared(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	conn := srv.Conn(t)
	if _, err := conn.Exec(ctx, `CREATE TABLE ta (id INT PRIMARY KEY); CREATE TABLE tb (id INT PRIMARY KEY);
		CREATE PUBLICATION shared FOR TABLE ta`); err != nil {
		t.Fatal(err)
	}
	// tb's source found no publication, and ta's made it before tb's CREATE.
	made, err := pgCreatePublication(ctx, conn, "shared", `"public"."tb"`, false)
	if err != nil || made {
		t.Fatalf("creating a publication another source made: made %v, err %v; want neither", made, err)
	}
	if err := pgPublication(ctx, conn, "shared", `"public"."tb"`, &spec.PostgresSource{Schema: "public", Table: "tb"}, false); err != nil {
		t.Fatal(err)
	}
	var tables []string
	rows, err := conn.Query(ctx, "SELECT tablename::text FROM pg_publication_tables WHERE pubname = 'shared' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, s)
	}
	if len(tables) != 2 || tables[0] != "ta" || tables[1] != "tb" {
		t.Fatalf("publication shared has %v, want [ta tb]", tables)
	}
}
