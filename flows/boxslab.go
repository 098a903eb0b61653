package flows

import (
	"unsafe"

	"tributary/schema"
)

// boxSlab puts row values into interfaces without a heap allocation each: converting an int64
// or a string to `any` allocates a copy of it (8 or 16 bytes), which for ten million rows of a
// few columns is most of the garbage an ingest makes. A boxSlab instead copies the value into
// an array shared by many values (words for the 8- and 4-byte kinds, strs for string headers)
// and returns an interface that points there, exactly what the conversion would have built but
// with the value stored in the shared array. The values are never written again once boxed,
// so the interfaces behave as any others (type switches, ==, reflect); an array lives as long
// as any of its values. A nil *boxSlab boxes the ordinary way.
//
// This relies on the layout of an empty interface in the gc toolchain, a type word then a
// pointer to the value for every type that is not pointer-shaped (the runtime's eface;
// reflect's emptyInterface), unchanged since Go 1.4. TestBoxSlab checks it.
type boxSlab struct {
	words []uint64
	strs  []string
}

// eface is the layout of an empty interface value.
type eface struct {
	typ, data unsafe.Pointer
}

// typeWord returns the type word of an interface holding a value of v's type.
func typeWord(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

var (
	int64Word     = typeWord(int64(0))
	int32Word     = typeWord(int32(0))
	float64Word   = typeWord(float64(0))
	decimalWord   = typeWord(schema.Decimal(0))
	dateWord      = typeWord(schema.Date(0))
	timestampWord = typeWord(schema.Timestamp(0))
	stringWord    = typeWord("")
)

// newBoxSlab returns a slab with room for words 8-byte values and strs strings before it
// allocates more.
func newBoxSlab(words, strs int) *boxSlab {
	return &boxSlab{words: make([]uint64, 0, words), strs: make([]string, 0, strs)}
}

// reset empties the slab for reuse when its arrays hold words and strs values, and reports
// whether they do. The values boxed before are overwritten by the next ones: only a slab none
// of whose values is in use any more may be reset (blockPool).
func (b *boxSlab) reset(words, strs int) bool {
	if cap(b.words) < words || cap(b.strs) < strs {
		return false
	}
	b.words, b.strs = b.words[:0], b.strs[:0]
	return true
}

// word returns a fresh word of the slab's array; once that is full, of a new one (an array is
// never grown in place: the values boxed in it must stay where they are).
func (b *boxSlab) word() unsafe.Pointer {
	if len(b.words) == cap(b.words) {
		b.words = make([]uint64, 0, max(64, cap(b.words)))
	}
	b.words = b.words[:len(b.words)+1]
	return unsafe.Pointer(&b.words[len(b.words)-1])
}

// box returns the interface of type word typ whose value is at p.
func box(typ, p unsafe.Pointer) (v any) {
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, p
	return v
}

func (b *boxSlab) int64(v int64) any {
	if b == nil {
		return v
	}
	p := b.word()
	*(*int64)(p) = v
	return box(int64Word, p)
}

func (b *boxSlab) int32(v int32) any {
	if b == nil {
		return v
	}
	p := b.word()
	*(*int32)(p) = v
	return box(int32Word, p)
}

func (b *boxSlab) float64(v float64) any {
	if b == nil {
		return v
	}
	p := b.word()
	*(*float64)(p) = v
	return box(float64Word, p)
}

func (b *boxSlab) decimal(v schema.Decimal) any {
	if b == nil {
		return v
	}
	p := b.word()
	*(*schema.Decimal)(p) = v
	return box(decimalWord, p)
}

func (b *boxSlab) date(v schema.Date) any {
	if b == nil {
		return v
	}
	p := b.word()
	*(*schema.Date)(p) = v
	return box(dateWord, p)
}

func (b *boxSlab) timestamp(v schema.Timestamp) any {
	if b == nil {
		return v
	}
	p := b.word()
	*(*schema.Timestamp)(p) = v
	return box(timestampWord, p)
}

func (b *boxSlab) string(v string) any {
	if b == nil {
		return v
	}
	if len(b.strs) == cap(b.strs) {
		b.strs = make([]string, 0, max(64, cap(b.strs)))
	}
	b.strs = append(b.strs, v)
	return box(stringWord, unsafe.Pointer(&b.strs[len(b.strs)-1]))
}
