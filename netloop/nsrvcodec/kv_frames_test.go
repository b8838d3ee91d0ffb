package nsrvcodec

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wheelmq/wheelmq/actors/namesrv"
	"github.com/wheelmq/wheelmq/netloop/remoting"
)

// javaFrame builds a RemotingCommand frame with a JSON header as a Java
// client (fastjson) writes it: RemotingCommand's properties sorted by name,
// no remark, extFields in the order of Java's HashMap (by bucket of
// String.hashCode: namespace, value, key), serializeTypeCurrentRPC JSON.
func javaFrame(header string, body []byte) []byte {
	frame := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)+len(body)))
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(header))) // serialize type 0 (JSON)
	frame = append(frame, header...)
	return append(frame, body...)
}

// dumpFrame renders a frame as the annotated hex of testdata/*.hex: '#'
// starts a comment, the rest are hex digits.
func dumpFrame(about string, frame []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", about)
	b.WriteString("# Golden RemotingCommand frame; regenerate with: go test ./actors/namesrv -run TestKVGoldenFrames -update\n")
	n := binary.BigEndian.Uint32(frame)
	word := binary.BigEndian.Uint32(frame[4:])
	h := int(word & 0xFFFFFF)
	fmt.Fprintf(&b, "%x  # total length L = %d\n", frame[:4], n)
	fmt.Fprintf(&b, "%x  # header word: serialize type %d, header length %d\n", frame[4:8], word>>24, h)
	header, body := frame[8:8+h], frame[8+h:]
	fmt.Fprintf(&b, "# JSON header: %s\n", header)
	writeHexLines(&b, header)
	fmt.Fprintf(&b, "# body: %d bytes", len(body))
	if len(body) > 0 {
		fmt.Fprintf(&b, ": %s", body)
	}
	b.WriteString("\n")
	writeHexLines(&b, body)
	return b.String()
}

func writeHexLines(b *strings.Builder, data []byte) {
	for len(data) > 0 {
		n := min(len(data), 32)
		fmt.Fprintf(b, "%x\n", data[:n])
		data = data[n:]
	}
}

// parseHexDump reads the golden format back.
func parseHexDump(text string) ([]byte, error) {
	var sb strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		sb.WriteString(strings.Join(strings.Fields(line), ""))
	}
	return hex.DecodeString(sb.String())
}

// goldenFrame compares frame with testdata/name.hex (rewritten under
// -update) and returns the decoded command.
func goldenFrame(t *testing.T, name, about string, frame []byte) *remoting.Command {
	t.Helper()
	path := filepath.Join("testdata", name+".hex")
	if *update {
		if err := os.WriteFile(path, []byte(dumpFrame(about, frame)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run go test -update)", path, err)
	}
	got, err := parseHexDump(string(text))
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	if !bytes.Equal(got, frame) {
		t.Fatalf("%s holds\n%x\nwant\n%x", path, got, frame)
	}
	cmd, err := remoting.DecodeFrame(got[4:])
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return cmd
}

// TestKVGoldenFrames decodes the four KV requests exactly as a Java client
// (MQClientAPIImpl.putKVConfigValue and friends) sends them, serves them in
// order, and pins the GET_KV_CONFIG and GET_KVLIST_BY_NAMESPACE answers as
// wheelmq encodes them (JSON, as the request).
func TestKVGoldenFrames(t *testing.T) {
	r := namesrv.NewRegistry()
	steps := []struct {
		name, about, header string
		code                int32
		want                map[string]string // request fields the frame decodes to
		respFile, respAbout string            // "": the response is not pinned
		respField, respBody string
	}{
		{
			name:  "kv_put_java_json",
			about: "PUT_KV_CONFIG (100) as Java's MQClientAPIImpl.putKVConfigValue sends it (PutKVConfigRequestHeader)",
			header: `{"code":100,"extFields":{"namespace":"ORDER_TOPIC_CONFIG","value":"broker-a:4;broker-b:2","key":"orders"},` +
				`"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}`,
			code: remoting.PutKVConfig,
			want: map[string]string{"namespace": namesrv.NamespaceOrderTopicConfig, "key": "orders", "value": "broker-a:4;broker-b:2"},
		},
		{
			name:  "kv_get_java_json",
			about: "GET_KV_CONFIG (101) as Java's MQClientAPIImpl.getKVConfigValue sends it (GetKVConfigRequestHeader)",
			header: `{"code":101,"extFields":{"namespace":"ORDER_TOPIC_CONFIG","key":"orders"},` +
				`"flag":0,"language":"JAVA","opaque":2,"serializeTypeCurrentRPC":"JSON","version":479}`,
			code: remoting.GetKVConfig, want: map[string]string{"namespace": namesrv.NamespaceOrderTopicConfig, "key": "orders"},
			respFile: "kv_get_response_json", respAbout: "wheelmq's GET_KV_CONFIG answer: SUCCESS, header value (GetKVConfigResponseHeader)",
			respField: "broker-a:4;broker-b:2",
		},
		{
			name:  "kv_list_java_json",
			about: "GET_KVLIST_BY_NAMESPACE (219) as Java's MQClientAPIImpl.getKVListByNamespace sends it",
			header: `{"code":219,"extFields":{"namespace":"ORDER_TOPIC_CONFIG"},` +
				`"flag":0,"language":"JAVA","opaque":3,"serializeTypeCurrentRPC":"JSON","version":479}`,
			code: remoting.GetKVListByNamespace, want: map[string]string{"namespace": namesrv.NamespaceOrderTopicConfig},
			respFile: "kv_list_response_json", respAbout: "wheelmq's GET_KVLIST_BY_NAMESPACE answer: SUCCESS, body KVTable",
			respBody: `{"table":{"orders":"broker-a:4;broker-b:2"}}`,
		},
		{
			name:  "kv_delete_java_json",
			about: "DELETE_KV_CONFIG (102) as DefaultMQAdminExt.deleteTopic sends it last (DeleteKVConfigRequestHeader)",
			header: `{"code":102,"extFields":{"namespace":"ORDER_TOPIC_CONFIG","key":"orders"},` +
				`"flag":0,"language":"JAVA","opaque":4,"serializeTypeCurrentRPC":"JSON","version":479}`,
			code: remoting.DeleteKVConfig, want: map[string]string{"namespace": namesrv.NamespaceOrderTopicConfig, "key": "orders"},
		},
	}
	for _, st := range steps {
		cmd := goldenFrame(t, st.name, st.about, javaFrame(st.header, nil))
		if cmd.Code != st.code || cmd.Language != "JAVA" || len(cmd.ExtFields) != len(st.want) {
			t.Fatalf("%s: decoded %+v", st.name, cmd)
		}
		for k, v := range st.want {
			if cmd.Field(k) != v {
				t.Fatalf("%s: field %s = %q, want %q", st.name, k, cmd.Field(k), v)
			}
		}
		resp := handle(r, cmd, t0)
		if resp.Code != remoting.Success || resp.Opaque != cmd.Opaque || resp.Serialize != remoting.SerializeJSON {
			t.Fatalf("%s: answer %+v", st.name, resp)
		}
		if st.respField != "" && resp.Field(fieldValue) != st.respField {
			t.Fatalf("%s: value %q", st.name, resp.Field(fieldValue))
		}
		if st.respBody != "" && string(resp.Body) != st.respBody {
			t.Fatalf("%s: body %s", st.name, resp.Body)
		}
		if st.respFile == "" {
			continue
		}
		frame, err := remoting.EncodeFrame(resp)
		if err != nil {
			t.Fatal(err)
		}
		goldenFrame(t, st.respFile, st.respAbout, frame)
	}
	if _, ok := r.KVConfig().Get(namesrv.NamespaceOrderTopicConfig, "orders"); ok {
		t.Fatal("the delete frame left the item")
	}
}
