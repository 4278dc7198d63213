// Package redisserver holds what the agents beside a Redis server share.
package redisserver

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Await returns once the server rdb reaches answers PING: until then its
// node serves nothing, so it is not ready. A server that exits meanwhile
// ends the agent (sdk's Supervise).
func Await(rdb *redis.Client) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
