// Builds the AI bot media test vector and checks it with the official
// SDK's decryptFile (the function the SDK's downloadFile uses).
const crypto = require('crypto');
const fs = require('fs');
const { decryptFile } = require('@wecom/aibot-node-sdk');
const key = Buffer.from('6a1d0f3c9b2e4a5f8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b', 'hex');
const plain = Buffer.from('Hermes 附件测试向量 (pad > 16)');
const pad = 32 - (plain.length % 32);
const padded = Buffer.concat([plain, Buffer.alloc(pad, pad)]);
const c = crypto.createCipheriv('aes-256-cbc', key, key.subarray(0, 16));
c.setAutoPadding(false);
const enc = Buffer.concat([c.update(padded), c.final()]);
const back = decryptFile(enc, key.toString('base64'));
if (!back.equals(plain)) throw new Error('SDK decryptFile disagrees');
console.log(JSON.stringify({sdk: '@wecom/aibot-node-sdk@1.0.7 decryptFile', aeskey: key.toString('base64'),
  ciphertext: enc.toString('base64'), plaintext: plain.toString('base64'), padding: pad}, null, 1));
