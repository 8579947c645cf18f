package nft

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/kubebus/kubebus/proxy/rules"
)

const rtnLocal = 2 // RTN_LOCAL, fib's address type of a local address

var (
	keyAddrProtoPort = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService)
	keyProtoPort     = nftables.MustConcatSetType(nftables.TypeInetProto, nftables.TypeInetService)
	keyAddrAddr      = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeIPAddr)
)

func mapSet(t *nftables.Table, m rules.Map) *nftables.Set {
	key := keyAddrProtoPort
	if m.Key == rules.KeyProtoPort {
		key = keyProtoPort
	}
	return &nftables.Set{Table: t, Name: m.Name, IsMap: true, Concatenation: true, KeyType: key, DataType: nftables.TypeVerdict}
}

func hairpinSet(t *nftables.Table) *nftables.Set {
	return &nftables.Set{Table: t, Name: rules.SetHairpin, Concatenation: true, KeyType: keyAddrAddr}
}

// hairpinElements are the set's (a . a) keys.
func hairpinElements(as []netip.Addr) []nftables.SetElement {
	out := make([]nftables.SetElement, len(as))
	for i, a := range as {
		b := a.As4()
		out[i] = nftables.SetElement{Key: append(b[:], b[:]...)}
	}
	return out
}

func affinitySet(t *nftables.Table, s rules.Set) *nftables.Set {
	return &nftables.Set{Table: t, Name: s.Name, KeyType: nftables.TypeIPAddr, Dynamic: true, HasTimeout: true, Timeout: s.Timeout}
}

// elementKey is the map key of e: each field of a concatenation takes a
// multiple of 4 bytes.
func elementKey(k rules.KeyKind, e rules.Element) []byte {
	var b []byte
	if k == rules.KeyAddrProtoPort {
		a := e.Addr.As4()
		b = append(b, a[:]...)
	}
	return append(b, byte(e.Proto), 0, 0, 0, byte(e.Port>>8), byte(e.Port), 0, 0)
}

func elements(m rules.Map, es []rules.Element) []nftables.SetElement {
	out := make([]nftables.SetElement, len(es))
	for i, e := range es {
		out[i] = nftables.SetElement{Key: elementKey(m.Key, e), VerdictData: &expr.Verdict{Kind: expr.VerdictGoto, Chain: e.Goto}}
	}
	return out
}

func chainOf(t *nftables.Table, c rules.Chain) (*nftables.Chain, error) {
	ch := &nftables.Chain{Name: c.Name, Table: t}
	if c.Hook == nil {
		return ch, nil
	}
	switch c.Hook.Type {
	case "nat":
		ch.Type = nftables.ChainTypeNAT
	case "filter":
		ch.Type = nftables.ChainTypeFilter
	default:
		return nil, fmt.Errorf("chain %s: unknown chain type %q", c.Name, c.Hook.Type)
	}
	switch c.Hook.Hook {
	case "prerouting":
		ch.Hooknum = nftables.ChainHookPrerouting
	case "input":
		ch.Hooknum = nftables.ChainHookInput
	case "forward":
		ch.Hooknum = nftables.ChainHookForward
	case "output":
		ch.Hooknum = nftables.ChainHookOutput
	case "postrouting":
		ch.Hooknum = nftables.ChainHookPostrouting
	default:
		return nil, fmt.Errorf("chain %s: unknown hook %q", c.Name, c.Hook.Hook)
	}
	ch.Priority = nftables.ChainPriorityRef(nftables.ChainPriority(c.Hook.Priority))
	p := nftables.ChainPolicyAccept
	ch.Policy = &p
	return ch, nil
}

func markMasquerade() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(^uint32(rules.MasqueradeMark)),
			Xor:  binaryutil.NativeEndian.PutUint32(rules.MasqueradeMark)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1},
	}
}

func saddr() *expr.Payload {
	return &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4}
}

func l4proto(p rules.Proto) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{byte(p)}},
	}
}

func affinityUpdate(set string) *expr.Dynset {
	return &expr.Dynset{SrcRegKey: 1, SetName: set, Operation: uint32(unix.NFT_DYNSET_OP_UPDATE)}
}

func dnat(a netip.Addr, port uint16) []expr.Any {
	ip := a.As4()
	return []expr.Any{
		&expr.Immediate{Register: 1, Data: ip[:]},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	}
}

// addRule queues the rule r of chain ch on the connection.
func addRule(c *nftables.Conn, t *nftables.Table, ch *nftables.Chain, r rules.Rule) error {
	var ex []expr.Any
	lookupMap := func(name string) *expr.Lookup {
		return &expr.Lookup{SourceRegister: 1, SetName: name, IsDestRegSet: true, DestRegister: 0}
	}
	switch r := r.(type) {
	case rules.Jump:
		ex = []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: r.Chain}}
	case rules.Goto:
		ex = []expr.Any{&expr.Verdict{Kind: expr.VerdictGoto, Chain: r.Chain}}
	case rules.CTNewJump:
		ex = []expr.Any{
			&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
				Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitNEW), Xor: make([]byte, 4)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
			&expr.Verdict{Kind: expr.VerdictJump, Chain: r.Chain},
		}
	case rules.DispatchAddrPort:
		ex = []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 9},
			&expr.Payload{DestRegister: 10, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			lookupMap(r.Map),
		}
	case rules.DispatchLocalPort:
		ex = []expr.Any{
			&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(rtnLocal)},
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Payload{DestRegister: 9, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			lookupMap(r.Map),
		}
	case rules.MasqueradeMarked:
		ex = []expr.Any{
			&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
				Mask: binaryutil.NativeEndian.PutUint32(rules.MasqueradeMark), Xor: make([]byte, 4)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
			&expr.Masq{},
		}
	case rules.Reject:
		ex = []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 3}} // port unreachable
	case rules.MarkMasquerade:
		ex = markMasquerade()
	case rules.PickEndpoint:
		if r.Mod == 1 {
			return fmt.Errorf("chain %s: random pick modulo 1", ch.Name)
		}
		if r.Mod > 1 {
			ex = append(ex,
				&expr.Numgen{Register: 1, Modulus: r.Mod, Type: unix.NFT_NG_RANDOM},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: make([]byte, 4)})
		}
		ex = append(ex, l4proto(r.Proto)...)
		if r.Affinity != "" {
			ex = append(ex, saddr(), affinityUpdate(r.Affinity))
		}
		ex = append(ex, dnat(r.Addr, r.Port)...)
	case rules.StickyEndpoint:
		ex = append(ex, saddr(), &expr.Lookup{SourceRegister: 1, SetName: r.Set})
		ex = append(ex, l4proto(r.Proto)...)
		ex = append(ex, saddr(), affinityUpdate(r.Set))
		ex = append(ex, dnat(r.Addr, r.Port)...)
	case rules.MasqueradeHairpin:
		ex = []expr.Any{
			saddr(),
			&expr.Payload{DestRegister: 9, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Lookup{SourceRegister: 1, SetName: r.Set},
			&expr.Masq{},
		}
	default:
		return fmt.Errorf("chain %s: unknown rule kind %T", ch.Name, r)
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: ex})
	return nil
}
