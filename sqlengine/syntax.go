package sqlengine

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// SyntaxError is a query that DuckDB's parser refuses: its message and the byte offset in the
// query it points at (-1 when it names none; DuckDB counts characters, converted here).
type SyntaxError struct {
	Message string
	Offset  int
}

// Syntax parses each query with DuckDB's parser alone, as json_serialize_sql does (no table,
// column or function is looked up, so the datasets a query reads need not exist), and returns
// the parse errors by the query's index in queries. A statement the parser reads but cannot
// serialize (PIVOT, for one) counts as parsed. The error is one of opening DuckDB. dir is the
// folder the queries' files resolve against (Open's): the DuckDB instance opened to parse is
// kept for the next Open of dir, so that a run that checks its SQL, then runs a query, opens
// one instance, not two (about 7 ms each).
func Syntax(dir string, queries []string) (map[int]SyntaxError, error) {
	db := takeWarm(dir)
	if db == nil {
		var err error
		if db, err = OpenDB(dir); err != nil {
			return nil, err
		}
	}
	defer putWarm(dir, db)
	out := map[int]SyntaxError{}
	for i, q := range queries {
		if se, ok, err := syntax(db, q); err != nil {
			return nil, err
		} else if !ok {
			out[i] = se
		}
	}
	return out, nil
}

// syntax parses one query (see Syntax); ok is false when it does not parse.
func syntax(db *sql.DB, query string) (SyntaxError, bool, error) {
	var text string
	if err := db.QueryRow("SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", query).Scan(&text); err != nil {
		return SyntaxError{}, false, fmt.Errorf("sqlengine: parsing a query: %w", err)
	}
	var res struct {
		Error    bool   `json:"error"`
		Type     string `json:"error_type"`
		Message  string `json:"error_message"`
		Position string `json:"position"`
	}
	if err := json.Unmarshal([]byte(text), &res); err != nil {
		if strings.HasPrefix(text, `{"error":false,`) {
			// The query parsed: its statement holds a value JSON has no number for (Infinity
			// for the literal 1e999, beyond a DOUBLE), which the run reports if it must.
			return SyntaxError{}, true, nil
		}
		return SyntaxError{}, false, fmt.Errorf("sqlengine: parsing a query: %w", err)
	}
	if !res.Error || res.Type != "parser" {
		return SyntaxError{}, true, nil
	}
	pos, err := strconv.Atoi(res.Position)
	if err != nil || pos < 0 {
		return SyntaxError{Message: res.Message, Offset: -1}, false, nil
	}
	return SyntaxError{Message: res.Message, Offset: byteOffset(query, pos)}, false, nil
}

// byteOffset returns the byte offset in s of its character (code point) at index chars, as
// DuckDB's parser counts positions, or -1 past the end.
func byteOffset(s string, chars int) int {
	n := 0
	for i := range s {
		if n == chars {
			return i
		}
		n++
	}
	if n == chars {
		return len(s)
	}
	return -1
}

// warm is a DuckDB instance that Syntax opened and no Engine has taken yet (at most one).
var warm struct {
	sync.Mutex
	dir string
	db  *sql.DB
}

// takeWarm returns the warm instance opened for dir, which the caller then owns, or nil.
func takeWarm(dir string) *sql.DB {
	warm.Lock()
	defer warm.Unlock()
	if warm.db == nil || warm.dir != dir {
		return nil
	}
	db := warm.db
	warm.db = nil
	return db
}

// putWarm keeps db, opened for dir, for the next takeWarm of dir; an instance kept before is
// closed.
func putWarm(dir string, db *sql.DB) {
	warm.Lock()
	defer warm.Unlock()
	if warm.db != nil {
		forgetMacros(warm.db)
		warm.db.Close()
	}
	warm.dir, warm.db = dir, db
}
