package postgres

import (
	"encoding/binary"
	"math"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// rawDecoder decodes one field of a row from the bytes PostgreSQL sent
// into the value pgx's own decoding would give (as sqliteValue takes it);
// ok is false for bytes of an unexpected length.
type rawDecoder func(b []byte) (v any, ok bool)

// rawDecoders returns a decoder for every field of a scan's result when
// each comes in a form decoded here — the binary forms of the integer
// and float types, bytea and tid, and text in either form — and nil
// otherwise (pgx's Values decodes those rows). Streaming scans spend a
// tenth of their time in Values, most of it boxing through pgx's codecs.
func rawDecoders(fields []pgconn.FieldDescription) []rawDecoder {
	decoders := make([]rawDecoder, len(fields))
	for i, f := range fields {
		var d rawDecoder
		switch {
		case f.DataTypeOID == pgtype.TextOID:
			d = decodeText // the same bytes in both forms
		case f.Format != pgtype.BinaryFormatCode:
		case f.DataTypeOID == pgtype.Int8OID:
			d = fixed(8, func(b []byte) any { return int64(binary.BigEndian.Uint64(b)) })
		case f.DataTypeOID == pgtype.Int4OID:
			d = fixed(4, func(b []byte) any { return int64(int32(binary.BigEndian.Uint32(b))) })
		case f.DataTypeOID == pgtype.Int2OID:
			d = fixed(2, func(b []byte) any { return int64(int16(binary.BigEndian.Uint16(b))) })
		case f.DataTypeOID == pgtype.OIDOID:
			d = fixed(4, func(b []byte) any { return int64(binary.BigEndian.Uint32(b)) })
		case f.DataTypeOID == pgtype.BoolOID:
			d = fixed(1, func(b []byte) any { return b[0] != 0 })
		case f.DataTypeOID == pgtype.Float8OID:
			d = fixed(8, func(b []byte) any { return math.Float64frombits(binary.BigEndian.Uint64(b)) })
		case f.DataTypeOID == pgtype.Float4OID:
			d = fixed(4, func(b []byte) any { return float32(math.Float32frombits(binary.BigEndian.Uint32(b))) })
		case f.DataTypeOID == pgtype.ByteaOID:
			d = func(b []byte) (any, bool) { return append([]byte{}, b...), true }
		case f.DataTypeOID == pgtype.TIDOID:
			d = fixed(6, func(b []byte) any {
				return pgtype.TID{BlockNumber: binary.BigEndian.Uint32(b), OffsetNumber: binary.BigEndian.Uint16(b[4:]), Valid: true}
			})
		}
		if d == nil {
			return nil
		}
		decoders[i] = d
	}
	return decoders
}

func decodeText(b []byte) (any, bool) { return string(b), true }

// fixed decodes a value of n bytes.
func fixed(n int, decode func([]byte) any) rawDecoder {
	return func(b []byte) (any, bool) {
		if len(b) != n {
			return nil, false
		}
		return decode(b), true
	}
}
