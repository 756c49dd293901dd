import { describe, expect, it } from 'vitest';
import { maskAddress, maskAddressLine, maskName, maskOrderNo, maskPhone } from './masking.js';

describe('hardware view masking (spec §2.13, §2.15)', () => {
  it('phone: the middle four digits never show', () => {
    expect(maskPhone('+8613812345678')).toBe('+86138****5678');
    expect(maskPhone('+14155550123')).toBe('+141****0123');
    expect(maskPhone('12345')).toBe('*****');
    expect(maskPhone(null)).toBeNull();
  });

  it('name: the family name is hidden', () => {
    expect(maskName('张三')).toBe('*三');
    expect(maskName('欧阳娜娜')).toBe('*阳娜娜');
    expect(maskName('Zhang San')).toBe('***** San');
    expect(maskName('A')).toBe('*');
  });

  it('address line: no house or room number', () => {
    expect(maskAddressLine('No. 12 Example Road, Room 1203')).toBe('No. ** Example Road, Room **');
    expect(maskAddressLine('文三路１２号')).toBe('文三路**号');
  });

  it('order number: the buyer\'s own only in full', () => {
    expect(maskOrderNo('HWO20261124093000123456')).toBe('HWO****3456');
  });

  it('address: no phone at all, the rest masked as above', () => {
    const masked = maskAddress({ receiverName: '张三', receiverPhone: '+8613812345678', province: '浙江', city: '杭州', district: '西湖', addressLine: '文三路 88 号', postalCode: '310000' });
    expect(masked).toEqual({ receiverName: '*三', province: '浙江', city: '杭州', district: '西湖', addressLine: '文三路 ** 号', postalCode: '310000' });
    expect(JSON.stringify(masked)).not.toContain('138');
  });
});
