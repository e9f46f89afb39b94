// The checks of the files' and HTTP's JSON, assembly/index.ts: the request
// a guest sends http_request, and the answers of http_request and
// file_list it reads. checkCaps returns "" or the failures, one a line;
// npm test (or json_test.go) compiles and runs it with test/json.ts.
import { Code, FileEntry, HttpRequest, HttpResponse, lastCode } from "../assembly/index";

let failures = "";

function expect(what: string, got: string, want: string): void {
  if (got != want) failures += what + ": got " + got + ", want " + want + "\n";
}

function nullable(s: string | null): string {
  return s === null ? "null" : s;
}

export function checkCaps(): string {
  failures = "";
  // A request: only the URL when nothing else is set, as the host reads it.
  expect("a GET", new HttpRequest("https://a.example/x?q=1").toString(), '{"url":"https://a.example/x?q=1"}');
  const req = new HttpRequest("https://mod.example/v1");
  req.method = "POST";
  req.body = '{"text":"hi"}';
  req.timeoutMs = 500;
  req.header("Content-Type", "application/json").header("Accept", "text/plain")
    .secretHeader("Authorization", "MOD_KEY", "Bearer ").secretHeader("X-Key", "K");
  expect("a POST with every field", req.toString(),
    '{"method":"POST","url":"https://mod.example/v1","headers":{"Content-Type":"application/json","Accept":"text/plain"},' +
    '"secret_headers":{"Authorization":{"secret":"MOD_KEY","prefix":"Bearer "},"X-Key":{"secret":"K"}},' +
    '"body":"{\\"text\\":\\"hi\\"}","timeout_ms":500}');
  req.header("Accept", "*/*");
  expect("a header set again", req.headers.toString(), '{"Content-Type":"application/json","Accept":"*/*"}');
  const bin = new HttpRequest("https://a.example/");
  bin.method = "PUT";
  bin.bodyBase64 = "/wA=";
  expect("a body in base64", bin.toString(), '{"method":"PUT","url":"https://a.example/","body_base64":"/wA="}');
  const empty = new HttpRequest("https://a.example/");
  empty.body = "";
  expect("an empty body", empty.toString(), '{"url":"https://a.example/","body":""}');

  // A response as the host gives it.
  const res = HttpResponse.parse('{"status":201,"headers":{"Content-Type":"text/plain","X-Echo":"[secret]"},"body":"ok\\n"}');
  if (res === null) {
    failures += "parse a response: null\n";
  } else {
    expect("response", [res.status.toString(), nullable(res.body), nullable(res.bodyBase64), nullable(res.header("content-type")),
      nullable(res.header("X-ECHO")), nullable(res.header("Missing"))].join("|"), "201|ok\n|null|text/plain|[secret]|null");
  }
  const b64 = HttpResponse.parse('{"status":200,"body_base64":"/wA="}');
  if (b64 === null) {
    failures += "parse a binary response: null\n";
  } else {
    expect("binary response", [b64.status.toString(), nullable(b64.body), nullable(b64.bodyBase64), b64.headers.toString()].join("|"),
      "200|null|/wA=|{}");
  }
  expect("a malformed response", HttpResponse.parse("{") === null ? "null" : "not null", "null");
  expect("a response not an object", HttpResponse.parse("[]") === null ? "null" : "not null", "null");
  expect("its code", lastCode().toString(), Code.INVALID.toString());

  // A directory's entries as file_list gives them.
  const list = FileEntry.parseList('[{"name":"a.md","dir":false,"size":6},{"name":"sub","dir":true,"size":0}]');
  if (list === null) {
    failures += "parse a list: null\n";
  } else {
    const got: string[] = [];
    for (let i = 0; i < list.length; i++) got.push(list[i].name + ":" + list[i].dir.toString() + ":" + list[i].size.toString());
    expect("list", got.join(","), "a.md:false:6,sub:true:0");
  }
  const none = FileEntry.parseList("[]");
  expect("an empty directory", none === null ? "null" : none.length.toString(), "0");
  expect("a malformed list", FileEntry.parseList('{"name":"a"}') === null ? "null" : "not null", "null");
  return failures;
}
