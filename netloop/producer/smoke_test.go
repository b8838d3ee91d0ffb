package producer_test

import (
	"context"
	"testing"
	"time"

	"github.com/wheelmq/wheelmq/actors/node/nodetest"
	"github.com/wheelmq/wheelmq/netloop/producer"
)

func TestSmoke(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	topic := nodetest.Unique("smoke")
	nodetest.CreateTopic(t, n, topic, 4)
	p, err := producer.New(producer.WithNameServers(n.NamesrvAddr()), producer.WithInstanceName(nodetest.Unique("i")))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < 5; i++ {
		res, err := p.Send(ctx, producer.NewMessage(topic, []byte("hello")))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", res)
	}
	res, err := p.Send(ctx, producer.NewMessage(nodetest.Unique("auto"), []byte("hello")))
	t.Logf("%+v %v", res, err)
}
