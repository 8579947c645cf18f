package nft

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/kubebus/kubebus/proxy/rules"
)

const rtnLocal = 2 // RTN_LOCAL, fib's address type of a local address

var keyProtoPort = nftables.MustConcatSetType(nftables.TypeInetProto, nftables.TypeInetService)

// family holds what differs between the ip and the ip6 table: address
// types, header offsets and the registers of concatenations (a 16-byte
// address fills four 32-bit registers).
type family struct {
	v6                          bool
	addrType                    nftables.SetDatatype
	keyAddrProtoPort            nftables.SetDatatype
	keyAddrAddr                 nftables.SetDatatype
	saddrOff, daddrOff, addrLen uint32
	// regProto, regPort: the registers after an address loaded into
	// register 1; regSecondAddr: where a second address goes.
	regProto, regPort, regSecondAddr uint32
	natFamily                        uint32
	rejectCode                       uint8 // port unreachable in ICMP or ICMPv6
}

var (
	familyIPv4 = family{
		addrType:         nftables.TypeIPAddr,
		keyAddrProtoPort: nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService),
		keyAddrAddr:      nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeIPAddr),
		saddrOff:         12, daddrOff: 16, addrLen: 4,
		regProto: 9, regPort: 10, regSecondAddr: 9,
		natFamily: unix.NFPROTO_IPV4, rejectCode: 3,
	}
	familyIPv6 = family{
		v6:               true,
		addrType:         nftables.TypeIP6Addr,
		keyAddrProtoPort: nftables.MustConcatSetType(nftables.TypeIP6Addr, nftables.TypeInetProto, nftables.TypeInetService),
		keyAddrAddr:      nftables.MustConcatSetType(nftables.TypeIP6Addr, nftables.TypeIP6Addr),
		saddrOff:         8, daddrOff: 24, addrLen: 16,
		regProto: 12, regPort: 13, regSecondAddr: 2,
		natFamily: unix.NFPROTO_IPV6, rejectCode: 4,
	}
)

func familyOf(t *nftables.Table) family {
	if t.Family == nftables.TableFamilyIPv6 {
		return familyIPv6
	}
	return familyIPv4
}

// addrBytes is a in the family's length.
func (f family) addrBytes(a netip.Addr) []byte {
	if f.v6 {
		b := a.As16()
		return b[:]
	}
	b := a.As4()
	return b[:]
}

func mapSet(t *nftables.Table, m rules.Map) *nftables.Set {
	key := familyOf(t).keyAddrProtoPort
	if m.Key == rules.KeyProtoPort {
		key = keyProtoPort
	}
	return &nftables.Set{Table: t, Name: m.Name, IsMap: true, Concatenation: true, KeyType: key, DataType: nftables.TypeVerdict}
}

func hairpinSet(t *nftables.Table) *nftables.Set {
	return &nftables.Set{Table: t, Name: rules.SetHairpin, Concatenation: true, KeyType: familyOf(t).keyAddrAddr}
}

// hairpinElements are the set's (a . a) keys.
func hairpinElements(f family, as []netip.Addr) []nftables.SetElement {
	out := make([]nftables.SetElement, len(as))
	for i, a := range as {
		b := f.addrBytes(a)
		out[i] = nftables.SetElement{Key: append(slices.Clip(b), b...)}
	}
	return out
}

func affinitySet(t *nftables.Table, s rules.Set) *nftables.Set {
	return &nftables.Set{Table: t, Name: s.Name, KeyType: familyOf(t).addrType, Dynamic: true, HasTimeout: true, Timeout: s.Timeout}
}

// elementKey is the map key of e: each field of a concatenation takes a
// multiple of 4 bytes.
func elementKey(f family, k rules.KeyKind, e rules.Element) []byte {
	var b []byte
	if k == rules.KeyAddrProtoPort {
		b = append(b, f.addrBytes(e.Addr)...)
	}
	return append(b, byte(e.Proto), 0, 0, 0, byte(e.Port>>8), byte(e.Port), 0, 0)
}

func elements(f family, m rules.Map, es []rules.Element) []nftables.SetElement {
	out := make([]nftables.SetElement, len(es))
	for i, e := range es {
		out[i] = nftables.SetElement{Key: elementKey(f, m.Key, e), VerdictData: &expr.Verdict{Kind: expr.VerdictGoto, Chain: e.Goto}}
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

func (f family) saddr() *expr.Payload {
	return &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: f.saddrOff, Len: f.addrLen}
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

func (f family) dnat(a netip.Addr, port uint16) []expr.Any {
	return []expr.Any{
		&expr.Immediate{Register: 1, Data: f.addrBytes(a)},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: f.natFamily, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	}
}

// addRule queues the rule r of chain ch on the connection.
func addRule(c *nftables.Conn, t *nftables.Table, ch *nftables.Chain, r rules.Rule) error {
	f := familyOf(t)
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
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: f.daddrOff, Len: f.addrLen},
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: f.regProto},
			&expr.Payload{DestRegister: f.regPort, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
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
		ex = []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: f.rejectCode}} // port unreachable
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
			ex = append(ex, f.saddr(), affinityUpdate(r.Affinity))
		}
		ex = append(ex, f.dnat(r.Addr, r.Port)...)
	case rules.StickyEndpoint:
		ex = append(ex, f.saddr(), &expr.Lookup{SourceRegister: 1, SetName: r.Set})
		ex = append(ex, l4proto(r.Proto)...)
		ex = append(ex, f.saddr(), affinityUpdate(r.Set))
		ex = append(ex, f.dnat(r.Addr, r.Port)...)
	case rules.MasqueradeHairpin:
		ex = []expr.Any{
			f.saddr(),
			&expr.Payload{DestRegister: f.regSecondAddr, Base: expr.PayloadBaseNetworkHeader, Offset: f.daddrOff, Len: f.addrLen},
			&expr.Lookup{SourceRegister: 1, SetName: r.Set},
			&expr.Masq{},
		}
	default:
		return fmt.Errorf("chain %s: unknown rule kind %T", ch.Name, r)
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: ex})
	return nil
}
