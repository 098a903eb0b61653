//go:build race

package flows

// underRace says whether the tests run under the race detector (go test -race), which makes
// them several times slower: the heaviest equivalence tests then take fewer random cases.
const underRace = true
