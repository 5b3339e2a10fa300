// AWS SDK for JavaScript v2 (npm aws-sdk) against latchkey's S3 server,
// run by TestAWSJSv2. One "PASS name" or "FAIL name: why" line per check.
// The v2 signer lists content-type among its unsignable headers, so every
// request with a body carries an unsigned Content-Type (issue 24 item 1).
// Usage: node awsjs2_interop.js <endpoint> <access key> <secret key>
'use strict';
const AWS = require('aws-sdk');
const http = require('http');
const crypto = require('crypto');

const [endpoint, ak, sk] = process.argv.slice(2);
const s3 = new AWS.S3({
  endpoint, accessKeyId: ak, secretAccessKey: sk, region: 'us-east-1',
  s3ForcePathStyle: true, signatureVersion: 'v4', maxRetries: 0,
});
const bucket = 'awsjs2-' + crypto.randomBytes(6).toString('hex');
let failed = false;

async function check(name, fn) {
  try {
    await fn();
    console.log('PASS ' + name);
  } catch (e) {
    failed = true;
    console.log('FAIL ' + name + ': ' + String(e && (e.code || '') + ' ' + (e.message || e)).replace(/\n/g, ' '));
  }
}

function eq(what, got, want) {
  if (got !== want) throw new Error(what + ': got ' + JSON.stringify(got) + ', want ' + JSON.stringify(want));
}

function rawPut(url, body, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'PUT', headers: Object.assign({ 'Content-Length': Buffer.byteLength(body) }, headers) }, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

(async () => {
  await check('create bucket', async () => {
    await s3.createBucket({ Bucket: bucket }).promise();
  });
  await check('put object with unsigned content-type', async () => {
    const req = s3.putObject({ Bucket: bucket, Key: 'a.txt', Body: 'hello', ContentType: 'text/plain', Metadata: { colour: 'blue' } });
    let signed = '';
    req.on('sign', () => { signed = req.httpRequest.headers['Authorization'] || ''; });
    await req.promise();
    if (/content-type/.test(signed)) throw new Error('the SDK signed content-type: ' + signed);
    const h = await s3.headObject({ Bucket: bucket, Key: 'a.txt' }).promise();
    eq('ContentType', h.ContentType, 'text/plain');
    eq('metadata', h.Metadata.colour, 'blue');
  });
  await check('get object', async () => {
    const g = await s3.getObject({ Bucket: bucket, Key: 'a.txt' }).promise();
    eq('body', g.Body.toString(), 'hello');
  });
  await check('put object with content-md5', async () => {
    const md5 = crypto.createHash('md5').update('sum').digest('base64');
    await s3.putObject({ Bucket: bucket, Key: 'md5', Body: 'sum', ContentMD5: md5 }).promise();
  });
  await check('managed multipart upload', async () => {
    const body = Buffer.alloc(6 << 20, 'x');
    const up = await s3.upload({ Bucket: bucket, Key: 'big', Body: body, ContentType: 'application/x-big' }, { partSize: 5 << 20, queueSize: 2 }).promise();
    if (!/-2"$/.test(up.ETag)) throw new Error('multipart ETag ' + up.ETag);
    const h = await s3.headObject({ Bucket: bucket, Key: 'big' }).promise();
    eq('ContentLength', h.ContentLength, 6 << 20);
    eq('ContentType', h.ContentType, 'application/x-big');
  });
  await check('copy object', async () => {
    await s3.copyObject({ Bucket: bucket, Key: 'copy', CopySource: bucket + '/a.txt', MetadataDirective: 'REPLACE', ContentType: 'text/markdown' }).promise();
    const h = await s3.headObject({ Bucket: bucket, Key: 'copy' }).promise();
    eq('ContentType', h.ContentType, 'text/markdown');
  });
  await check('list objects v2', async () => {
    const l = await s3.listObjectsV2({ Bucket: bucket }).promise();
    eq('keys', l.Contents.map((o) => o.Key).join(','), 'a.txt,big,copy,md5');
    if (!/^"[0-9a-f]{32}"$/.test(l.Contents[0].ETag)) throw new Error('listed ETag ' + l.Contents[0].ETag);
  });
  await check('presigned put with a browser content-type', async () => {
    const url = s3.getSignedUrl('putObject', { Bucket: bucket, Key: 'presigned', Expires: 300 });
    const r = await rawPut(url, 'from a browser', { 'Content-Type': 'image/png' });
    eq('status ' + r.body, r.status, 200);
    const h = await s3.headObject({ Bucket: bucket, Key: 'presigned' }).promise();
    eq('ContentType', h.ContentType, 'image/png');
  });
  await check('get bucket policy of a bucket without one', async () => {
    try {
      await s3.getBucketPolicy({ Bucket: bucket }).promise();
    } catch (e) {
      eq('code', e.code, 'NoSuchBucketPolicy');
      eq('status', e.statusCode, 404);
      return;
    }
    throw new Error('GetBucketPolicy succeeded');
  });
  await check('delete objects', async () => {
    const keys = ['a.txt', 'big', 'copy', 'md5', 'presigned'];
    const d = await s3.deleteObjects({ Bucket: bucket, Delete: { Objects: keys.map((Key) => ({ Key })) } }).promise();
    eq('deleted', d.Deleted.length, keys.length);
    await s3.deleteBucket({ Bucket: bucket }).promise();
  });
  process.exit(failed ? 1 : 0);
})();
