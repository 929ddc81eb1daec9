package core

import "encoding/hex"

// The paseto.* ops run raw PASETO v4.local with a caller's key. They exist
// so that every runtime can check the official PASETO vectors through the
// very module it ships, and so that tokens can be compared with other
// PASETO implementations.

func readHex32(p *parser, obj int32, key string) ([32]byte, *Error) {
	var out [32]byte
	s, ok := p.string(p.get(obj, key))
	if !ok || len(s) != 64 {
		return out, newError(CodeRequestMalformed, quote(key)+" must be 32 bytes in hex")
	}
	if _, err := hex.Decode(out[:], bytesOf(s)); err != nil {
		return out, newError(CodeRequestMalformed, quote(key)+" must be 32 bytes in hex")
	}
	return out, nil
}

func (g *Guard) pasetoSealOp(root int32) *Error {
	p := &g.p
	key, err := readHex32(p, root, "key")
	if err != nil {
		return err
	}
	nonce, err := readHex32(p, root, "nonce")
	if err != nil {
		return err
	}
	payload, _ := p.string(p.get(root, "payload"))
	footer, _ := p.string(p.get(root, "footer"))
	implicit, _ := p.string(p.get(root, "implicit"))
	tok := v4LocalSeal(g.tok[:0], &key, &nonce, bytesOf(payload), bytesOf(footer), bytesOf(implicit))
	g.tok = tok
	g.begin()
	g.out = append(g.out, `,"token":`...)
	g.out = appendString(g.out, string(tok))
	g.end()
	return nil
}

func (g *Guard) pasetoOpenOp(root int32) *Error {
	p := &g.p
	key, err := readHex32(p, root, "key")
	if err != nil {
		return err
	}
	token, _ := p.string(p.get(root, "token"))
	implicit, _ := p.string(p.get(root, "implicit"))
	tb := bytesOf(token)
	var footer []byte
	if f, ok := p.string(p.get(root, "footer")); ok {
		footer = bytesOf(f)
	} else if footer, _ = v4LocalFooter(tb); footer == nil {
		footer = []byte{}
	}
	pt, oerr := v4LocalOpen(nil, &key, tb, footer, bytesOf(implicit))
	if oerr != nil {
		return stateError(ReasonTampered)
	}
	g.begin()
	g.out = append(g.out, `,"payload":`...)
	g.out = appendString(g.out, string(pt))
	g.out = append(g.out, `,"footer":`...)
	g.out = appendString(g.out, string(footer))
	g.end()
	return nil
}
