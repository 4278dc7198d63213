package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// ErrResourceFenced is returned by ResourceClient.Write when the resource refused a stale token.
var ErrResourceFenced = errors.New("fenced")

// ResourceClient talks to a resource server.
type ResourceClient struct {
	BaseURL string // e.g. http://resource:7000
	HTTP    *http.Client
}

// Write asks the resource to write. A refusal returns the response and
// ErrResourceFenced; any other failure leaves the outcome unknown.
func (c *ResourceClient) Write(ctx context.Context, req ResourceWrite) (ResourceAnswer, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return ResourceAnswer{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/write", bytes.NewReader(body))
	if err != nil {
		return ResourceAnswer{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	var resp ResourceAnswer
	status, err := c.do(hreq, &resp)
	switch {
	case err != nil:
		return resp, err
	case status == http.StatusOK:
		return resp, nil
	case status == http.StatusPreconditionFailed:
		return resp, ErrResourceFenced
	default:
		return resp, fmt.Errorf("resource answered %d", status)
	}
}

// Read returns the register of key.
func (c *ResourceClient) Read(ctx context.Context, key string) (Register, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/read?key="+url.QueryEscape(key), nil)
	if err != nil {
		return Register{}, err
	}
	var reg Register
	status, err := c.do(hreq, &reg)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("resource answered %d", status)
	}
	return reg, err
}

func (c *ResourceClient) do(req *http.Request, into any) (int, error) {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil && resp.StatusCode < 500 {
		return resp.StatusCode, fmt.Errorf("resource answer: %w", err)
	}
	return resp.StatusCode, nil
}
