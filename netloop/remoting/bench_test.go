package remoting

import (
	"bytes"
	"testing"
)

// sendHeader is a typical SEND_MESSAGE request from the Go producer.
func sendCommand() *Command {
	return &Command{Code: SendMessage, Language: "GO", Version: 317, Opaque: 12345,
		ExtFields: map[string]string{
			"producerGroup": "PG_orders", "topic": "orders", "defaultTopic": "TBW102",
			"defaultTopicQueueNums": "4", "queueId": "2", "sysFlag": "0",
			"bornTimestamp": "1735000000000", "flag": "0",
			"properties":     "KEYS\x01order-1\x02UNIQ_KEY\x010A0000010000271100000000000004D2\x02WAIT\x01true\x02",
			"reconsumeTimes": "0", "unitMode": "false", "batch": "false", "maxReconsumeTimes": "16",
		},
		Body: bytes.Repeat([]byte("x"), 256)}
}

func BenchmarkEncodeFrame(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run(st.String(), func(b *testing.B) {
			c := sendCommand()
			c.Serialize = st
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EncodeFrame(c); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(st.String()+"/append", func(b *testing.B) {
			c := sendCommand()
			c.Serialize = st
			buf := make([]byte, 0, 4096)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = AppendFrame(buf[:0], c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeJSONHeader(b *testing.B) {
	header := appendJSONHeader(nil, sendCommand())
	b.SetBytes(int64(len(header)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeJSONHeader(header); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeBinaryHeader(b *testing.B) {
	header, err := appendBinaryHeader(nil, sendCommand())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(header)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeBinaryHeader(header); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	frame, err := EncodeFrame(sendCommand())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeFrame(frame[4:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJSONHeaderNonJava decodes ali-ons' SEND_MESSAGE_V2 header
// (extFields numbers and a boolean), the lenient path.
func BenchmarkDecodeJSONHeaderNonJava(b *testing.B) {
	header := []byte(`{"code":310,"language":"JAVA","opaque":5,"flag":0,"version":121,"extFields":` +
		`{"a":"ncg9-producer","b":"nt9","c":"TBW102","d":4,"e":1,"f":0,"g":1796038377277,"h":0,` +
		`"i":"TAGS\u0001TagC\u0002KEYS\u0001nt9-early\u0002","j":0,"k":false}}`)
	b.SetBytes(int64(len(header)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeJSONHeader(header); err != nil {
			b.Fatal(err)
		}
	}
}
