import { corsHeaders } from './error-handler';

/** Headers PostHog lets a browser send besides the basics (posthog/utils_cors.py). */
const ALLOWED_EXTRA_HEADERS = new Set(
  [
    'traceparent', 'request-id', 'request-context', 'x-amzn-trace-id', 'x-cloud-trace-context', 'sentry-trace',
    'baggage', 'x-highlight-request', 'x-datadome-clientid', 'x-posthog-token', 'x-b3-sampled', 'x-b3-spanid',
    'x-b3-traceid', 'x-b3-parentspanid', 'b3',
  ],
);

/** The answer to a CORS preflight of a public endpoint: 200 `{"status":1}`, as PostHog. */
export function preflightResponse(request: Request): Response {
  const asked = (request.headers.get('access-control-request-headers') ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h && ALLOWED_EXTRA_HEADERS.has(h.toLowerCase()));
  return new Response('{"status":1}', {
    status: 200,
    headers: {
      'content-type': 'application/json',
      ...corsHeaders(request),
      'access-control-allow-methods': 'GET, POST, OPTIONS',
      'access-control-allow-headers': ['X-Requested-With', 'Content-Type', ...asked].join(','),
      'access-control-max-age': '86400',
    },
  });
}

export { corsHeaders };
